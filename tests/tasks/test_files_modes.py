"""The `files` pack asking several typed questions per document: per_field items share the
document as their context (so a runner can prefill it once), json items ask every field as
one object; both report under the pack's `name`, and a long document is cut once per row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalrun.contract.types import CONTEXT_SEPARATOR, Generation, Item
from evalrun.evals.config import load_config
from evalrun.evals.scoring import score_item
from evalrun.tasks import BuildOptions, get_pack
from tests.fakes.runs import answered

ROWS = [
    {"ref": "a1", "text": "Invoice A-17 from Alpha GmbH.\nTotal due: EUR 1,234.50.\nDue 04.05.2024.",
     "total_due": "EUR 1234.50", "due": "2024-05-04", "number": "A-17", "cur": "euro"},
    {"ref": "b2", "text": "Invoice B-2 from Beta AG.\nTotal: CHF 99.00. Paid on receipt.",
     "total_due": "CHF 99.00", "due": "", "number": "B-2", "cur": "CHF"},
]

FIELDS = {
    "invoice_number": {"type": "id", "column": "number", "question": "What is the invoice number?"},
    "total": {"type": "amount", "column": "total_due", "question": "What is the total due in {ref}?"},
    "due_date": {"type": "date", "column": "due", "nullable": True, "question": "When is payment due?"},
    "currency": {"type": "enum", "column": "cur", "question": "Which currency?",
                 "options": {"allowed": ["EUR", "CHF"], "synonyms": {"euro": "EUR"}}},
    "vendor": {"type": "text", "column": "text", "prompt": "{text}\n\nWho issued this invoice?"},
}


def words(text: str) -> int:
    return len(text.split())


def _data(tmp_path: Path, rows: list[dict[str, Any]] = ROWS) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def params(tmp_path: Path, rows: list[dict[str, Any]] = ROWS, **over: Any):
    task = {"name": "invoices", "path": str(_data(tmp_path, rows)), "id_column": "ref",
            "document": "Read the invoice.\n\n{text}", "mode": "per_field", "fields": FIELDS, **over}
    return get_pack("files").params.model_validate(task)


def build(p, options: BuildOptions | None = None, count=words) -> list[Item]:
    return get_pack("files").items(p, count, options)


def test_per_field_asks_each_question_after_the_shared_document(tmp_path: Path) -> None:
    items = build(params(tmp_path))
    assert [it.id for it in items[:5]] == [f"invoices/a1/{f}" for f in FIELDS]
    assert len(items) == 10 and {it.pack for it in items} == {"invoices"}
    shared = [it for it in items if it.context is not None]
    assert len(shared) == 8  # vendor has its own whole prompt
    for it in shared:
        assert it.prompt == it.context + CONTEXT_SEPARATOR + it.question
        assert it.answer_format == "text" and len(it.fields) == 1
        assert it.meta.field == it.fields[0].name and it.meta.mode == "per_field"
        assert it.meta.context_tokens == words(it.prompt)
    assert {it.context for it in shared if it.meta.row == 0} == {"Read the invoice.\n\n" + ROWS[0]["text"]}
    assert items[1].question == "What is the total due in a1?"  # questions are templates too
    vendor = items[4]
    assert vendor.context is None and vendor.question is None
    assert vendor.prompt == ROWS[0]["text"] + "\n\nWho issued this invoice?"


def test_per_field_golds_options_and_decoys(tmp_path: Path) -> None:
    items = {it.id: it for it in build(params(tmp_path, date_order="mdy"))}
    assert items["invoices/a1/total"].fields[0].gold == "EUR 1234.50"
    assert items["invoices/a1/currency"].fields[0].gold == "euro"
    assert items["invoices/a1/currency"].fields[0].options == {"allowed": ["EUR", "CHF"], "synonyms": {"euro": "EUR"}}
    assert items["invoices/a1/due_date"].fields[0].options == {"date_order": "mdy"}
    assert items["invoices/a1/total"].fields[0].options == {}  # date_order goes to date fields only
    decoy = items["invoices/b2/due_date"]
    assert decoy.fields[0].gold is None and decoy.meta.decoy is True
    assert items["invoices/a1/due_date"].meta.decoy is False


def test_a_fields_own_date_order_wins(tmp_path: Path) -> None:
    fields = {**FIELDS, "due_date": {**FIELDS["due_date"], "options": {"date_order": "ymd"}}}
    items = {it.id: it for it in build(params(tmp_path, fields=fields, date_order="mdy"))}
    assert items["invoices/a1/due_date"].fields[0].options == {"date_order": "ymd"}


def test_per_field_items_score(tmp_path: Path) -> None:
    items = {it.id: it for it in build(params(tmp_path))}

    def scored(item_id: str, output: str) -> str:
        it = items[item_id]
        return score_item(it, answered(it, output)).fields[it.fields[0].name].outcome

    assert scored("invoices/a1/total", "EUR 1,234.50") == "correct"
    assert scored("invoices/a1/currency", "It is in euro.") == "correct"
    assert scored("invoices/b2/due_date", "not found") == "correct_absent"


def test_json_mode_asks_every_field_as_one_object(tmp_path: Path) -> None:
    fields = {k: {kk: vv for kk, vv in v.items() if kk != "prompt"} for k, v in FIELDS.items()}
    fields["vendor"]["question"] = "the company that issued it"
    items = build(params(tmp_path, mode="json", fields=fields, date_order="dmy"))
    assert [it.id for it in items] == ["invoices/a1", "invoices/b2"]
    first = items[0]
    assert first.answer_format == "json" and [f.name for f in first.fields] == list(FIELDS)
    assert first.context == "Read the invoice.\n\n" + ROWS[0]["text"]
    assert first.prompt == first.context + CONTEXT_SEPARATOR + first.question
    for name in FIELDS:
        assert f'"{name}"' in first.question
    assert "(an amount with its currency): What is the total due in a1?" in first.question
    assert '"currency" (one of EUR, CHF): Which currency?' in first.question
    assert first.meta.mode == "json" and "field" not in first.meta
    assert first.fields[2].options == {"date_order": "dmy"}
    assert items[1].fields[2].gold is None
    gen = Generation(item_id=first.id, pack=first.pack, prompt_hash=first.prompt_hash,
                     output=json.dumps({"invoice_number": "A-17", "total": "EUR 1,234.50", "due_date": "2024-05-04",
                                        "currency": "EUR", "vendor": ROWS[0]["text"]}))
    assert score_item(first, gen).correct


def test_json_instruction_keeps_literal_braces_out_of_the_template(tmp_path: Path) -> None:
    fields = {"total": {"type": "amount", "column": "total_due"}, "odd{name}": {"type": "id", "column": "number"}}
    (item, _) = build(params(tmp_path, mode="json", fields=fields))
    assert '"odd{name}"' in item.question


def test_mode_defaults_to_per_field_with_a_document(tmp_path: Path) -> None:
    p = params(tmp_path, mode=None)
    assert [it.id for it in build(p)][:2] == ["invoices/a1/invoice_number", "invoices/a1/total"]


def test_pack_prompt_serves_a_field_without_a_question(tmp_path: Path) -> None:
    fields = {**FIELDS, "vendor": {"type": "text", "column": "text"}}
    items = build(params(tmp_path, fields=fields, prompt="{text}\nWho?"))
    assert items[4].id == "invoices/a1/vendor" and items[4].prompt == ROWS[0]["text"] + "\nWho?"


def test_system_is_the_same_for_every_question_of_a_row(tmp_path: Path) -> None:
    items = build(params(tmp_path, system="You read invoice {ref}."))
    assert {it.system for it in items if it.meta.row == 1} == {"You read invoice b2."}


def test_without_id_column_rows_are_numbered(tmp_path: Path) -> None:
    items = build(params(tmp_path, id_column=None))
    assert items[0].id == "invoices/0/invoice_number" and items[-1].id == "invoices/1/vendor"


def test_default_name_is_files(tmp_path: Path) -> None:
    p = params(tmp_path)
    p = get_pack("files").params.model_validate({**p.model_dump(), "name": "files"})
    assert {it.pack for it in build(p)} == {"files"} and build(p)[0].id.startswith("files/a1/")


def test_limit_builds_only_the_rows_needed(tmp_path: Path) -> None:
    rows = [{**ROWS[0], "ref": f"r{i}"} for i in range(200)]
    p = params(tmp_path, rows)
    seen: list[str] = []

    def count(text: str) -> int:
        seen.append(text)
        return words(text)

    items = build(p, BuildOptions(limit=7, max_prompt_tokens=1000), count)
    assert [it.id for it in items][-2:] == ["invoices/r1/invoice_number", "invoices/r1/total"]
    assert len(items) == 7
    assert not any("r2?" in t for t in seen)  # row r2's questions were never tokenized
    assert build(p, BuildOptions(limit=7, max_prompt_tokens=1000)) == build(p, BuildOptions(max_prompt_tokens=1000))[:7]


LONG = "Invoice Z-9. Total due: EUR 5.00. " + "Terms and conditions apply to this order. " * 200


def test_a_long_document_is_an_error_naming_the_row(tmp_path: Path) -> None:
    from evalrun.tasks import PackDataError

    p = params(tmp_path, [ROWS[0], {**ROWS[1], "text": LONG}])
    with pytest.raises(PackDataError) as info:
        build(p, BuildOptions(max_prompt_tokens=300))
    assert info.value.key == "path" and "row 1 (line 2) (id 'b2')" in info.value.message


def test_truncate_cuts_the_document_once_per_row(tmp_path: Path) -> None:
    p = params(tmp_path, [ROWS[0], {**ROWS[1], "text": LONG}], truncate=True)
    room = 300
    items = build(p, BuildOptions(max_prompt_tokens=room))
    long_row = [it for it in items if it.meta.row == 1]
    shared = [it for it in long_row if it.context is not None]
    assert len({it.context for it in shared}) == 1  # every question sees the same document
    cuts = {json.dumps(it.meta.truncated, sort_keys=True) for it in shared}
    assert len(cuts) == 1 and shared[0].meta.truncated["column"] == "text"
    assert 0 < shared[0].meta.truncated["chars_kept"] < len(LONG)
    assert all(it.meta.context_tokens == words(it.prompt) <= room for it in long_row)
    # the longest question fills the room: the cut is the longest that fits them all
    assert max(it.meta.context_tokens for it in shared) >= room - 5
    vendor = next(it for it in long_row if it.fields[0].name == "vendor")
    assert vendor.meta.truncated["column"] == "text" and vendor.meta.context_tokens <= room
    assert all("truncated" not in it.meta for it in items if it.meta.row == 0)


def test_truncate_keeps_the_room_for_the_system(tmp_path: Path) -> None:
    p = params(tmp_path, [{**ROWS[1], "text": LONG}], truncate=True, system="You are careful with {ref}.")
    items = build(p, BuildOptions(max_prompt_tokens=300))
    assert all(it.meta.context_tokens + words(it.system) <= 300 for it in items)


def test_config_names_the_pack_in_every_item(tmp_path: Path, cfg_file) -> None:
    _data(tmp_path)
    task = {"pack": "files", "name": "invoices", "path": "docs.jsonl", "document": "{text}", "fields": FIELDS,
            "id_column": "ref"}
    cfg = load_config(cfg_file("f.yaml", yaml.safe_dump({"name": "f", "tasks": [task]}, sort_keys=False)))
    assert {it.pack for it in build(cfg.tasks[0].params)} == {"invoices"}
