"""The `files` pack: the user's JSONL/CSV/Parquet data with a schema and a template;
every data problem is a configuration error naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config
from evalrun.evals.scoring import score_item
from evalrun.contract.types import Generation
from evalrun.tasks import get_pack

ROWS = [
    {"doc": "Invoice A. Total due: EUR 1,234.50.", "total": "EUR 1234.50", "due": "2024-03-14", "ref": "a1"},
    {"doc": "Invoice B. Total due: EUR 99.00.", "total": "EUR 99.00", "due": "", "ref": "b2"},
]


def _write(tmp_path: Path, fmt: str) -> Path:
    frame = pd.DataFrame(ROWS)
    path = tmp_path / f"docs.{fmt}"
    if fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    elif fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    return path


def _config(cfg_file, data_name: str, **task) -> Path:
    entry = {"pack": "files", "path": data_name, "prompt": "{doc}\nWhat is the total?", "fields": {"total": "amount"}}
    entry.update(task)
    import yaml

    return cfg_file("files.yaml", yaml.safe_dump({"name": "f", "tasks": [entry]}, sort_keys=False))


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_each_format_builds_items(tmp_path: Path, cfg_file, fmt: str) -> None:
    data = _write(tmp_path, fmt)
    cfg = load_config(_config(cfg_file, data.name, id_column="ref"))
    params = cfg.tasks[0].params
    assert params.data_sha256 and Path(params.path).is_absolute()
    items = get_pack("files").build(params, lambda s: len(s.split()))
    assert [it.id for it in items] == ["files/a1", "files/b2"]
    assert items[0].prompt == "Invoice A. Total due: EUR 1,234.50.\nWhat is the total?"
    assert items[0].fields[0].gold == "EUR 1234.50" and items[0].answer_format == "text"
    gen = Generation(item_id=items[0].id, pack="files", prompt_hash=items[0].prompt_hash, output="EUR 1,234.50")
    assert score_item(items[0], gen).correct


def test_empty_nullable_cell_is_a_decoy_and_two_fields_default_to_json(tmp_path: Path, cfg_file) -> None:
    data = _write(tmp_path, "csv")
    cfg = load_config(_config(cfg_file, data.name, fields={"total": "amount", "due": "date"}, nullable=["due"]))
    items = get_pack("files").build(cfg.tasks[0].params, lambda s: 1)
    assert items[1].fields[1].gold is None
    assert items[0].answer_format == "json"
    gen = Generation(item_id=items[1].id, pack="files", prompt_hash=items[1].prompt_hash,
                     output='{"total": "EUR 99.00", "due": null}')
    scored = score_item(items[1], gen)
    assert scored.parse_status == "strict"
    assert {k: v.outcome for k, v in scored.fields.items()} == {"total": "correct", "due": "correct_absent"}


def test_editing_the_data_changes_the_hash(tmp_path: Path, cfg_file) -> None:
    data = _write(tmp_path, "jsonl")
    first = load_config(_config(cfg_file, data.name)).tasks[0].params.data_sha256
    data.write_text(data.read_text().replace("1234.50", "1234.60"))
    assert load_config(_config(cfg_file, data.name)).tasks[0].params.data_sha256 != first


@pytest.mark.parametrize(
    "task, words",
    [
        ({"fields": {"amount_due": "amount"}}, ["fields.amount_due", "column 'amount_due' not found"]),
        ({"fields": {"total": "money"}}, ["tasks[0].fields.total", "allowed"]),
        ({"prompt": "{document}"}, ["prompt: placeholder {document} is not a column"]),
        ({"path": "missing.jsonl"}, ["file not found"]),
        ({"path": "notes.txt"}, ["unsupported file type"]),
        ({"id_column": "total_x"}, ["id_column"]),
        ({"field_options": {"other": {}}}, ["field_options.other"]),
    ],
)
def test_data_problems_are_config_errors(tmp_path: Path, cfg_file, task: dict, words: list[str]) -> None:
    _write(tmp_path, "jsonl")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ConfigError) as info:
        load_config(_config(cfg_file, "docs.jsonl", **task))
    for word in words:
        assert word in str(info.value), str(info.value)


def test_unreadable_file_is_a_config_error(tmp_path: Path, cfg_file) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(_config(cfg_file, "bad.parquet"))
