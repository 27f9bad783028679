"""Every way the `files` pack's per-field schema, modes, name and date_order can be wrong
is a configuration error at the key that is wrong (`tasks[0].fields.NAME.KEY`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config

ROW = {"ref": "a1", "text": "Invoice A-17. Total due: EUR 5.00.", "total_due": "EUR 5.00", "due": "2024-05-04",
       "number": "A-17"}
Q = {"type": "amount", "column": "total_due", "question": "What is the total?"}


def _cfg(tmp_path: Path, rows: list[dict[str, Any]] | None = None, **task: Any) -> Path:
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows or [ROW]))
    entry = {"pack": "files", "path": "docs.jsonl", "document": "{text}", "fields": {"total": Q}, **task}
    entry = {k: v for k, v in entry.items() if v is not None}
    path = tmp_path / "files.yaml"
    path.write_text(yaml.safe_dump({"name": "f", "tasks": [entry]}, sort_keys=False))
    return path


def _error(tmp_path: Path, rows: list[dict[str, Any]] | None = None, **task: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(_cfg(tmp_path, rows, **task))
    return info.value


@pytest.mark.parametrize(
    "task, path, words",
    [
        # the field mapping itself
        ({"fields": {"total": {**Q, "colour": "red"}}}, "fields.total.colour", ["unknown key", "question"]),
        ({"fields": {"total": {"question": "?"}}}, "fields.total.type", ["required"]),
        ({"fields": {"total": {**Q, "type": "money"}}}, "fields.total.type", ["'money'", "amount"]),
        ({"fields": {"total": "money"}}, "fields.total", ["'money'", "allowed"]),
        ({"fields": {"total": 5}}, "fields.total", ["expected a type"]),
        ({"fields": {"total": {**Q, "nullable": "sometimes"}}}, "fields.total.nullable", []),
        ({"fields": {"total": {**Q, "options": [1]}}}, "fields.total.options", []),
        ({"fields": {"total": {**Q, "prompt": "{text}"}}}, "fields.total.prompt", ["either", "not both"]),
        ({"fields": {"total": {**Q, "column": "amount"}}}, "fields.total", ["column 'amount' not found"]),
        # questions, prompts and the document
        ({"fields": {"total": {"type": "amount", "column": "total_due"}}}, "fields.total.question",
         ["no question", "pack-level"]),
        ({"document": None, "mode": "per_field"}, "fields.total.question", ["document:"]),
        ({"document": None}, "fields.total.question", ["document:"]),
        ({"fields": {"total": {"type": "amount", "column": "total_due", "prompt": "{text}"}}}, "document",
         ["never asked"]),
        ({"prompt": "{text}"}, "prompt", ["never used"]),
        ({"fields": {"total": {**Q, "question": "Total of {doc}?"}}}, "fields.total.question",
         ["placeholder {doc} is not a column"]),
        ({"fields": {"total": {**Q, "question": "Total {text!z}?"}}}, "fields.total.question", ["does not format"]),
        ({"document": "{body}"}, "document", ["placeholder {body}"]),
        ({"fields": {"total": Q, "v": {"type": "text", "column": "text", "prompt": "{text:d}"}}}, "fields.v.prompt",
         ["does not format"]),
        ({"answer_format": "json"}, "answer_format", ["per_field answers in text"]),
        # json mode
        ({"mode": "json", "document": None}, "document", ["json mode"]),
        ({"mode": "json", "prompt": "{text}"}, "prompt", ["json mode builds"]),
        ({"mode": "json", "fields": {"total": Q, "v": {"type": "text", "column": "text", "prompt": "{text}"}}},
         "fields.v.prompt", ["json mode"]),
        ({"mode": "json", "answer_format": "text"}, "answer_format", ["json"]),
        ({"mode": "json", "fields": {"total": {**Q, "question": "{nope}"}}}, "fields.total.question",
         ["placeholder {nope}"]),
        ({"mode": "table"}, "mode", ["per_field", "json"]),
        # the original form
        ({"document": None, "prompt": "{text}", "fields": {"total": {"type": "amount", "column": "total_due",
                                                                     "prompt": "{text}"}}},
         "fields.total.prompt", ["per_field"]),
        ({"document": None, "fields": {"total_due": "amount"}}, "prompt", ["required"]),
        # name and date_order
        ({"name": "my invoices"}, "name", ["'my invoices' is not a pack name"]),
        ({"name": "a/b"}, "name", ["not a pack name"]),
        ({"name": "x" * 65}, "name", ["not a pack name"]),
        ({"date_order": "dym"}, "date_order", ["dmy", "mdy", "ymd"]),
        ({"fields": {"total": Q, "due": {"type": "date", "question": "?", "options": {"date_order": "yearfirst"}}}},
         "fields.due.options.date_order", ["'yearfirst'", "dmy"]),
        ({"fields": {"total": {**Q, "options": {"date_order": "dmy"}}}}, "fields.total.options.date_order",
         ["date fields only"]),
        ({"field_options": {"due": {"date_order": "x"}},
          "fields": {"total": Q, "due": {"type": "date", "question": "?"}}},
         "field_options.due.date_order", ["'x'"]),
        # options the scorer reads: a misspelt or malformed one is an error, never ignored
        ({"fields": {"total": {**Q, "options": {"decimals": ","}}}}, "fields.total.options.decimals",
         ["not an option of amount fields", "decimal"]),
        ({"fields": {"total": {**Q, "options": {"decimal": ";"}}}}, "fields.total.options.decimal", ["'.' or ','"]),
        ({"fields": {"total": {**Q, "options": {"aliases": 5}}}}, "fields.total.options.aliases", ["list of names"]),
        ({"fields": {"total": {**Q, "options": {"allowed": ["EUR"]}}}}, "fields.total.options.allowed",
         ["read for enum fields only"]),
        ({"fields": {"total": Q, "due": {"type": "date", "question": "?", "options": {"dayfirst": "no"}}}},
         "fields.due.options.dayfirst", ["true or false"]),
        ({"fields": {"total": Q, "cur": {"type": "enum", "question": "?", "column": "text",
                                         "options": {"synonyms": ["euro"]}}}},
         "fields.cur.options.synonyms", ["map written names"]),
        # the same thing said twice
        ({"gold_columns": {"total": "total_due"}}, "gold_columns.total", ["also given as fields.total.column"]),
        ({"fields": {"total": {**Q, "options": {"a": 1}}}, "field_options": {"total": {"b": 2}}},
         "field_options.total", ["also given"]),
        ({"fields": {"total": {**Q, "nullable": True}}, "nullable": ["total"]}, "nullable", ["also given"]),
        ({"gold_columns": {"tax": "x"}}, "gold_columns.tax", ["not one of the fields"]),
        ({"colour": "red"}, "colour", ["unknown key"]),
    ],
)
def test_schema_problems_are_config_errors_at_their_key(tmp_path: Path, task: dict, path: str,
                                                        words: list[str]) -> None:
    err = _error(tmp_path, **task)
    assert err.path == f"tasks[0].{path}", str(err)
    for word in words:
        assert word in str(err), str(err)


def test_golds_are_checked_in_the_mapped_column(tmp_path: Path) -> None:
    err = _error(tmp_path, [ROW, {**ROW, "total_due": "lots"}])
    assert err.path == "tasks[0].fields.total" and "row 1 (line 2), column 'total_due'" in str(err)
    assert "'lots' is not an amount" in str(err)


def test_a_missing_gold_needs_nullable(tmp_path: Path) -> None:
    fields = {"total": Q, "due": {"type": "date", "question": "When?"}}
    err = _error(tmp_path, [ROW, {**ROW, "due": ""}], fields=fields)
    assert err.path == "tasks[0].fields.due" and "nullable" in str(err)
    fields["due"]["nullable"] = True
    assert load_config(_cfg(tmp_path, [ROW, {**ROW, "due": ""}], fields=fields)).tasks[0].params


def test_enum_gold_outside_allowed_is_an_error(tmp_path: Path) -> None:
    fields = {"total": Q, "cur": {"type": "enum", "column": "number", "question": "?",
                                  "options": {"allowed": ["EUR"]}}}
    assert _error(tmp_path, fields=fields).path == "tasks[0].fields.cur"


def test_a_valid_schema_loads(tmp_path: Path) -> None:
    fields = {"total": Q, "due": {"type": "date", "question": "When?", "options": {"date_order": "mdy"}},
              "number": "id"}
    params = load_config(_cfg(tmp_path, fields=fields, prompt="{text}\nNumber?", date_order="ymd")).tasks[0].params
    assert params.name == "files" and params.date_order == "ymd"
