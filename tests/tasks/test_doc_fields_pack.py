"""The doc_fields pack is deterministic, sized in the model's tokens, states every
gold in the document in a realistic form, hides its decoys, and carries near-miss
distractors."""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from decimal import Decimal

import pytest
from pydantic import ValidationError

import evalrun.tasks.doc_fields as pack
from evalrun.contract.types import Item
from evalrun.tasks.doc_fields import _text as T
from evalrun.tasks import get_pack
from tests.machine import timed, within


def _count(text: str) -> int:
    # a stand-in counter for the pure pack logic: whitespace tokens
    return len(text.split())


def _build(**params) -> list[Item]:
    return pack.build(pack.DocFieldsParams(**params), _count)


def _document(item: Item) -> str:
    """The document part of a prompt: between the instruction and the question."""
    return item.prompt.split("\n\n", 1)[1].rsplit("\n\n", 1)[0]


def _by_doc(items: list[Item]) -> dict[str, list[Item]]:
    out: dict[str, list[Item]] = defaultdict(list)
    for it in items:
        out[f"{it.meta['doc_id']}-L{it.meta['target_tokens']}"].append(it)
    return out


_DATES = re.compile(r"\d{4}-\d\d-\d\d|\d{1,2} [A-Z][a-z]+ \d{4}|[A-Z][a-z]+ \d{1,2}, \d{4}")


def _rendered(kind: str, gold: str, meta: dict) -> str:
    """How the pack prints a gold value, rebuilt from the document's styles."""
    if kind == "amount":
        cur, value = gold.split()
        return T.render_amount(Decimal(value), cur, meta["amount_style"], "." in value)
    if kind == "date":
        return T.render_date(dt.date.fromisoformat(gold), meta["date_style"])
    return gold


def test_registered_and_deterministic() -> None:
    assert get_pack("doc_fields") is pack.SPEC
    a = [it.model_dump_json() for it in _build(documents=3, lengths=[600, 2000])]
    b = [it.model_dump_json() for it in _build(documents=3, lengths=[600, 2000])]
    c = [it.model_dump_json() for it in _build(documents=3, lengths=[600, 2000], seed=1)]
    assert a == b
    assert a != c
    j1 = [it.model_dump_json() for it in _build(documents=3, lengths=[600], mode="json")]
    assert j1 == [it.model_dump_json() for it in _build(documents=3, lengths=[600], mode="json")]


def test_same_facts_at_every_length() -> None:
    items = _build(documents=3, lengths=[600, 2000])
    golds: dict[str, dict[int, list]] = defaultdict(dict)
    for doc in _by_doc(items).values():
        golds[doc[0].meta["doc_id"]][doc[0].meta["target_tokens"]] = [(f.name, f.gold) for it in doc for f in it.fields]
    for per_len in golds.values():
        assert per_len[600] == per_len[2000]


def test_ids_unique_and_readable() -> None:
    items = _build(documents=6, lengths=[600, 800])
    ids = [it.id for it in items]
    assert len(set(ids)) == len(ids)
    for it in items:
        (f,) = it.fields
        assert it.id == f"doc_fields/{it.meta['doc_id']}-L{it.meta['target_tokens']}/{f.name}"
        assert re.fullmatch(r"doc_fields/(invoice|contract|financial_statement)-\d+-L\d+/[a-z_]+", it.id)
        assert it.answer_format == "text" and it.meta["mode"] == "per_field"
        assert it.prompt.rstrip().endswith('answer "not found".')
    json_items = _build(documents=6, lengths=[600], mode="json")
    assert [it.id for it in json_items] == [f"doc_fields/{t}-{i}-L600" for i, t in
                                            enumerate(["invoice", "contract", "financial_statement"] * 2)]


def test_doc_types_cycle_and_fields_per_type() -> None:
    items = _build(documents=6, lengths=[600], mode="json")
    for it in items:
        names = [f.name for f in it.fields]
        core = pack.CORE[it.meta["doc_type"]]
        assert names[: len(core)] == core
        assert set(names) <= set(core) | set(pack.OPTIONAL[it.meta["doc_type"]])
        kinds = {f.name: f.kind for f in it.fields}
        assert kinds["currency"] == "enum"
        options = next(f for f in it.fields if f.name == "currency").options
        assert options["allowed"] == ["EUR", "USD", "GBP", "CHF"]
        assert options["synonyms"]["€"] == "EUR"
    only_contracts = _build(documents=2, doc_types=["contract"], lengths=[600], mode="json")
    assert {it.meta["doc_type"] for it in only_contracts} == {"contract"}


@pytest.mark.parametrize("decoys", [1, 3])
def test_every_document_has_hidden_decoys(decoys: int) -> None:
    for doc in _by_doc(_build(documents=9, lengths=[600, 2000], decoys=decoys)).values():
        absent = [it.fields[0] for it in doc if it.fields[0].gold is None]
        assert len(absent) == decoys
        text = _document(doc[0]).lower()
        for f in absent:
            assert T.FIELD_INFO[f.name][1].lower() not in text, f.name
            for word in T.DECOY_WORDS.get(f.name, ()):
                assert word not in text, (f.name, word)
        for it in doc:
            if it.fields[0].gold is None:
                assert it.meta["decoy"] and it.meta["source"] is None and it.meta["field_depth"] is None
    none = _build(documents=3, lengths=[600], decoys=0)
    assert all(it.fields[0].gold is not None for it in none)


def test_each_gold_is_stated_in_its_rendered_form() -> None:
    items = _build(documents=9, lengths=[600, 2000])
    for it in items:
        (f,) = it.fields
        if f.gold is None:
            continue
        source = it.meta["source"]
        assert source in _document(it)
        assert _rendered(f.kind, f.gold, it.meta) in source, (f, source)
        if f.kind == "id":
            assert it.prompt.count(f.gold) == 1  # an id is stated once: its reference-line twin differs
    # canonical golds: ISO dates, ISO code + plain decimal, plain digits
    for it in items:
        (f,) = it.fields
        if f.gold is None:
            continue
        if f.kind == "amount":
            assert re.fullmatch(r"(EUR|USD|GBP|CHF) \d+(\.\d\d)?", f.gold)
        elif f.kind == "date":
            assert re.fullmatch(r"\d{4}-\d\d-\d\d", f.gold)
        elif f.kind == "number":
            assert f.gold.isdigit()


def test_formats_vary_between_documents_but_not_within() -> None:
    items = _build(documents=30, lengths=[600], mode="json")
    assert {it.meta["amount_style"] for it in items} == set(T.AMOUNT_STYLES)
    assert {it.meta["date_style"] for it in items} == set(T.DATE_STYLES)
    assert {f.gold for it in items for f in it.fields if f.name == "currency"} == set(T.CURRENCIES)
    for it in items:  # one style per document: every amount and date uses it
        for f in it.fields:
            if f.gold is not None and f.kind in ("amount", "date"):
                assert _rendered(f.kind, f.gold, it.meta) in it.meta["fields"][f.name]["source"]


def test_rendered_values_score_as_their_gold() -> None:
    from evalrun.evals.scoring import score_field

    value = Decimal("14851.20")
    for cur in T.CURRENCIES:
        for style in T.AMOUNT_STYLES:
            shown = T.render_amount(value, cur, style)
            assert score_field("amount", f"{cur} 14851.20", shown).outcome == "correct", shown
        shown = T.render_amount(Decimal("48213907"), cur, "european", cents=False)
        assert score_field("amount", f"{cur} 48213907", shown).outcome == "correct", shown
    for style in T.DATE_STYLES:
        shown = T.render_date(dt.date(2024, 3, 14), style)
        assert score_field("date", "2024-03-14", shown).outcome == "correct", shown
    assert score_field("id", "DE89 3704 0044 0532 0130 00", "DE89370400440532013000").outcome == "correct"


@pytest.mark.parametrize("length", [600, 2000, 16000])
def test_context_length_close_to_target(length: int) -> None:
    for it in _build(documents=3, lengths=[length]):
        assert 0.9 * length <= it.meta["context_tokens"] <= length, (it.id, it.meta["context_tokens"])
        assert it.meta["context_tokens"] == _count(it.prompt) and it.meta["target_tokens"] == length
    for it in _build(documents=3, lengths=[length], mode="json"):
        assert 0.9 * length <= it.meta["context_tokens"] <= length, (it.id, it.meta["context_tokens"])


def test_padding_has_no_digits_and_varies() -> None:
    for mode in ("per_field", "json"):
        for doc in _by_doc(_build(documents=3, lengths=[2000], mode=mode)).values():
            text = _document(doc[0])
            placed = {d["sentence"] for d in doc[0].meta["distractors"]}
            if mode == "json":
                placed |= {w["source"] for w in doc[0].meta["fields"].values() if w["source"]}
            else:
                placed |= {it.meta["source"] for it in doc if it.meta["source"]}
            for s in sorted(placed, key=len, reverse=True):
                assert s in text
                text = text.replace(s, "")
            assert not any(ch.isdigit() for ch in text), re.findall(r".{20}\d.{20}", text)[:3]
    (big,) = _build(documents=1, lengths=[16000], mode="json")
    sentences = re.findall(r"[A-Z][^.\n]*\.", _document(big))
    assert len(set(sentences)) > 0.5 * len(sentences)
    assert len({s for s in re.findall(r"\n\n([A-Z][a-z ]+)\n", _document(big))}) >= 8  # many clause topics


def test_fields_sit_at_recorded_spread_depths() -> None:
    for doc in _by_doc(_build(documents=3, lengths=[16000])).values():
        text = _document(doc[0])
        body = text[: len(text)]
        depths = []
        for it in doc:
            if it.meta["source"] is None:
                continue
            pos = body.index(it.meta["source"]) / len(body)
            assert abs(pos - it.meta["field_depth"]) < 0.01
            depths.append(it.meta["field_depth"])
        assert min(depths) < 0.2 and max(depths) > 0.8
        assert any(0.35 < x < 0.65 for x in depths)


def test_json_mode_lists_every_field() -> None:
    items = _build(documents=3, lengths=[800], mode="json")
    assert len(items) == 3
    for it in items:
        assert it.answer_format == "json" and it.meta["mode"] == "json"
        tail = it.prompt.rsplit("\n\n", 1)[1]
        assert "JSON object" in tail
        for f in it.fields:
            assert f'"{f.name}": ' in tail
        assert set(it.meta["fields"]) == {f.name for f in it.fields}
        for f in it.fields:
            where = it.meta["fields"][f.name]
            if f.gold is None:
                assert where == {"depth": None, "source": None}
            else:
                assert where["source"] in _document(it) and 0 <= where["depth"] <= 1
        assert any(f.gold is None for f in it.fields)


def test_fields_restriction() -> None:
    items = _build(documents=6, lengths=[600], fields=["total", "currency"])
    assert {it.fields[0].name for it in items} == {"total", "currency"}
    assert len(items) == 4 * 2 + 2  # statements have a currency but no total
    (it,) = _build(documents=1, lengths=[600], mode="json", fields=["iban", "total"])
    assert [f.name for f in it.fields] == ["total", "iban"]


def test_distractors_are_near_misses() -> None:
    items = _build(documents=6, lengths=[2000], mode="json")
    for it in items:
        gold = {f.name: f.gold for f in it.fields}
        kinds = {d["kind"]: d["sentence"] for d in it.meta["distractors"]}
        assert kinds and all(s in _document(it) for s in kinds.values())
        doc_type = it.meta["doc_type"]
        if doc_type == "invoice":
            ref = re.search(r"INV-\d{4}-\d{6}", kinds["ref_invoice"]).group()
            assert ref != gold["invoice_number"] and ref[:4] == gold["invoice_number"][:4]
            assert _rendered("amount", gold["total"], it.meta) not in kinds["prior_total"]
        if doc_type in ("invoice", "contract"):
            cur, total = gold["total"].split()
            credit = re.sub(r"[^\d]", "", kinds["credit_note"])
            digits = total.replace(".", "")
            assert len(credit) == len(digits) and sum(a != b for a, b in zip(credit, digits)) == 1
        if doc_type == "contract":
            assert "prev_fee" in kinds and "signing_date" in kinds
            assert _rendered("amount", gold["monthly_fee"], it.meta) not in kinds["prev_fee"]
        if doc_type == "financial_statement":
            assert str(int(gold["fiscal_year"]) - 1) in kinds["prior_year"]
            assert _rendered("amount", gold["revenue"], it.meta) in it.prompt
            assert _rendered("amount", gold["prior_year_revenue"], it.meta) in it.prompt
        # no distractor repeats any gold as printed (a year inside a date is no number)
        for f in it.fields:
            if f.gold is None or f.kind in ("enum", "text"):
                continue
            if f.kind == "number":
                hit = re.compile(rf"(?<![\d.,'-]){f.gold}(?![\d.,'-])")
                assert not any(hit.search(_DATES.sub("", s)) for s in kinds.values()), f.name
            else:
                shown = _rendered(f.kind, f.gold, it.meta)
                assert not any(shown in s for s in kinds.values()), (f.name, shown)


def test_params_validation() -> None:
    cases = [
        ({"mode": "table"}, "mode"),
        ({"colour": "red"}, "colour"),
        ({"doc_types": ["receipt"]}, "doc_types"),
        ({"fields": ["total", "shoe_size"]}, "unknown field"),
        ({"fields": []}, "at least one field"),
        ({"decoys": -1}, "decoys must be between 0 and"),
        ({"decoys": 9}, "decoys must be between 0 and"),
        ({"documents": 0}, "documents must be between"),
        ({"lengths": [100]}, "each length must be between"),
        ({"lengths": []}, "lengths"),
        ({"mode": "json", "lengths": [500]}, "json mode needs lengths of at least"),
    ]
    for params, message in cases:
        with pytest.raises(ValidationError, match=message):
            pack.DocFieldsParams(**params)
    p = pack.DocFieldsParams()
    assert (p.documents, p.lengths, p.mode, p.fields, p.decoys, p.seed) == (6, [600], "per_field", None, 1, 0)
    assert p.doc_types == ["invoice", "contract", "financial_statement"]


def test_question_is_short_and_after_the_document() -> None:
    (it,) = _build(documents=1, lengths=[600], fields=["total"])
    head, question = it.prompt.rsplit("\n\n", 1)
    assert question == ('Question: What is the total amount due in this invoice? Answer with the value only. '
                        'If the document does not state it, answer "not found".')
    assert head.startswith("Read the invoice below")


@pytest.mark.model
def test_real_tokenizer_lengths(smol_dir: str) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smol_dir)

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    with timed() as t:
        items = pack.build(pack.DocFieldsParams(documents=1, lengths=[500, 4000]), count)
    within(t, 10, "building two documents with the real tokenizer")
    assert {it.meta["target_tokens"] for it in items} == {500, 4000}
    for it in items:
        length = it.meta["target_tokens"]
        assert 0.9 * length <= it.meta["context_tokens"] <= length, (it.id, it.meta["context_tokens"])
        assert it.meta["context_tokens"] == count(it.prompt)
