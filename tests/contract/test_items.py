"""The Item contract: context/question/answer_format are fields, the prompt is their
exact join, metadata is typed and sparse, and items stored before these fields
existed load into the same Items the packs build now."""

from __future__ import annotations

import hashlib
import json

import pytest
from pydantic import ValidationError

from evalrun.contract.types import CONTEXT_SEPARATOR, Field, Item, ItemMeta

CONTEXT = "Below is a long text.\n\nThe special magic number for Oslo is 1234567. More text."
QUESTION = "Question: What is the special magic number for Oslo? Answer with the number only."
PROMPT = CONTEXT + CONTEXT_SEPARATOR + QUESTION


def _old_prompt_hash(system: str | None, prompt: str) -> str:
    """prompt_hash as evalrun computed it before these fields (it must never change)."""
    return hashlib.sha256(json.dumps([system, prompt], ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def _needle() -> Item:
    return Item(id="n/1", pack="needle_numbers", prompt=PROMPT, context=CONTEXT, question=QUESTION,
                answer_format="text", fields=[Field(name="value", kind="number", gold="1234567")],
                meta=ItemMeta(context_tokens=40, target_tokens=64, depth=0.5, value_kind="integer",
                              needle="The special magic number for Oslo is 1234567."))


def test_round_trip_is_exact_and_meta_is_sparse() -> None:
    item = _needle()
    line = item.model_dump_json()
    back = Item.model_validate_json(line)
    assert back == item and back.model_dump_json() == line
    assert set(json.loads(line)["meta"]) == {"context_tokens", "target_tokens", "depth", "value_kind", "needle"}
    assert back.prompt_hash == _old_prompt_hash(None, PROMPT)


def test_meta_reads_like_the_dict_it_was() -> None:
    meta = ItemMeta(doc_id="invoice-0", field_depth=None, custom_extra=[1, 2])
    assert meta.get("doc_id") == "invoice-0" and meta["doc_id"] == "invoice-0" and meta.doc_id == "invoice-0"
    assert "field_depth" in meta and meta.get("field_depth", "x") is None  # set to None: present
    assert "depth" not in meta and meta.get("depth", 0.3) == 0.3 and meta.depth is None
    assert meta["custom_extra"] == [1, 2]  # a pack's own keys stay allowed
    with pytest.raises(KeyError):
        meta["needle"]
    assert ItemMeta.model_validate(meta.model_dump()) == meta


@pytest.mark.parametrize("key", ["question", "answer_format", "context"])
def test_item_level_keys_are_not_metadata(key: str) -> None:
    with pytest.raises(ValidationError, match="an Item field"):
        ItemMeta.model_validate({key: "x"})
    # a new item that also has the field at the top is not upgraded as a legacy one
    with pytest.raises(ValidationError):
        Item(id="a", pack="p", prompt="q", question="q", fields=[], meta={key: "x"})


@pytest.mark.parametrize(("context", "question", "prompt"), [
    (CONTEXT, QUESTION, CONTEXT + "\n" + QUESTION),          # another separator
    (CONTEXT, QUESTION, PROMPT + " "),                        # trailing text
    (CONTEXT, None, PROMPT),                                  # a context needs its question
    (None, QUESTION, PROMPT),                                 # a bare question is the whole prompt
])
def test_prompt_relation_is_validated(context: str | None, question: str | None, prompt: str) -> None:
    with pytest.raises(ValidationError):
        Item(id="a", pack="p", prompt=prompt, context=context, question=question, fields=[])


def test_a_bare_question_and_a_plain_prompt_are_valid() -> None:
    assert Item(id="a", pack="p", prompt=QUESTION, question=QUESTION, fields=[]).context is None
    plain = Item(id="b", pack="p", prompt="Continue the notes.", fields=[])
    assert (plain.context, plain.question, plain.answer_format) == (None, None, None)


# Lines exactly as evalrun wrote items.jsonl before context/question/answer_format were
# fields: the question and answer format inside a plain meta dict.
LEGACY_NEEDLE = {
    "id": "needle_numbers/L64-D0.50-integer", "pack": "needle_numbers", "prompt": PROMPT, "system": None,
    "fields": [{"name": "value", "kind": "number", "gold": "1234567", "options": {}}],
    "meta": {"context_tokens": 40, "target_tokens": 64, "depth": 0.5, "value_kind": "integer",
             "needle": "The special magic number for Oslo is 1234567.", "question": QUESTION},
    "generation": None,
}
DOC_Q = 'Question: What is the total amount due in this invoice? Answer with the value only.'
DOC_CONTEXT = "Read the invoice below and answer the question after it.\n\nINVOICE\n\nTotal: EUR 14,851.20."
LEGACY_DOC = {
    "id": "doc_fields/invoice-0-L600/total", "pack": "doc_fields", "prompt": f"{DOC_CONTEXT}\n\n{DOC_Q}",
    "system": None, "fields": [{"name": "total", "kind": "amount", "gold": "EUR 14851.20", "options": {}}],
    "meta": {"doc_id": "invoice-0", "doc_type": "invoice", "target_tokens": 600, "mode": "per_field",
             "amount_style": "code", "date_style": "iso",
             "distractors": [{"kind": "prior_total", "depth": 0.4, "sentence": "Last year: EUR 1.00."}],
             "answer_format": "text", "context_tokens": 590, "question": DOC_Q, "field": "total",
             "decoy": False, "field_depth": 0.8, "source": "Total: EUR 14,851.20."},
    "generation": None,
}
LEGACY_FILES = {
    "id": "files/0", "pack": "files", "prompt": "Extract the total from: ...", "system": "Be exact.",
    "fields": [{"name": "total", "kind": "amount", "gold": "EUR 1.00", "options": {}}],
    "meta": {"row": 0, "answer_format": "json", "context_tokens": 12,
             "truncated": {"column": "doc", "chars_kept": 3, "chars": 9}},
    "generation": None,
}
LEGACY_LATENCY = {
    "id": "latency/short-0", "pack": "latency", "prompt": "Read the notes below.\n\nSome notes.", "system": None,
    "fields": [], "meta": {"context_tokens": 190, "target_tokens": 200, "shape": "short", "output_tokens": 300},
    "generation": {"max_new_tokens": 300, "ignore_eos": True},
}


@pytest.mark.parametrize(("record", "context", "question", "answer_format"), [
    (LEGACY_NEEDLE, CONTEXT, QUESTION, "text"),
    (LEGACY_DOC, DOC_CONTEXT, DOC_Q, "text"),
    (LEGACY_FILES, None, None, "json"),
    (LEGACY_LATENCY, None, None, None),
], ids=["needle", "doc_fields", "files", "latency"])
def test_a_legacy_line_loads_into_the_new_item(record: dict, context: str | None, question: str | None,
                                               answer_format: str | None) -> None:
    item = Item.model_validate_json(json.dumps(record))
    assert (item.context, item.question, item.answer_format) == (context, question, answer_format)
    assert item.prompt == record["prompt"] and item.prompt_hash == _old_prompt_hash(record["system"], record["prompt"])
    moved = {"question", "answer_format"}
    assert item.meta.model_dump(mode="json") == {k: v for k, v in record["meta"].items() if k not in moved}
    # the upgraded item writes the current form, which reads back unchanged
    assert Item.model_validate_json(item.model_dump_json()) == item


def test_a_legacy_question_the_prompt_does_not_end_with_gives_no_split() -> None:
    record = {**LEGACY_NEEDLE, "meta": {**LEGACY_NEEDLE["meta"], "question": "Question: something else?"}}
    item = Item.model_validate(record)
    assert item.context is None and item.question is None and "question" not in item.meta
