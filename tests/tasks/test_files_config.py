"""The `files` pack in a config: tasks that would report under one pack name are refused,
and the run key follows the data's content, not where the file lies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config, parse_config
from evalrun.evals.run import key_payload
from evalrun.evals.store import run_key
from evalrun.runners.models import ModelSource

ROW = {"doc": "Invoice A. Total due: EUR 5.00.", "total": "EUR 5.00"}
SOURCE = ModelSource("x", "gguf", "/x.gguf", {"gguf_sha256": "abc"})


def _files(path: Path, **over: Any) -> dict[str, Any]:
    return {"pack": "files", "path": str(path), "prompt": "{doc}\nTotal?", "fields": {"total": "amount"}, **over}


def _data(folder: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "docs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows or [ROW]))
    return path


def _config(tmp_path: Path, tasks: list[dict[str, Any]]) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"name": "r", "tasks": tasks}, sort_keys=False))
    return path


def _error(tmp_path: Path, tasks: list[dict[str, Any]]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, tasks))
    return info.value


DOC_FIELDS = {"pack": "doc_fields", "documents": 1, "lengths": [600]}
NEEDLE = {"pack": "needle_numbers", "lengths": [512], "depths": [0.5]}


@pytest.mark.parametrize(
    "first, second, label",
    [
        ({}, {}, "files"),
        ({"name": "invoices"}, {"name": "invoices"}, "invoices"),
        ({"name": "files"}, {}, "files"),
    ],
)
def test_two_files_tasks_under_one_name_are_refused(tmp_path: Path, first: dict, second: dict, label: str) -> None:
    data = _data(tmp_path)
    err = _error(tmp_path, [NEEDLE, _files(data, **first), _files(data, **second)])
    assert err.path == "tasks[2].name", str(err)
    assert f"tasks[1] already reports as pack {label!r}" in str(err) and "`name:`" in str(err)


def test_two_doc_fields_tasks_are_refused_too(tmp_path: Path) -> None:
    err = _error(tmp_path, [DOC_FIELDS, {**DOC_FIELDS, "lengths": [1200]}])
    assert err.path == "tasks[1].name" and "tasks[0] already reports as pack 'doc_fields'" in str(err)


def test_a_files_task_named_like_another_pack_is_refused(tmp_path: Path) -> None:
    err = _error(tmp_path, [NEEDLE, _files(_data(tmp_path), name="needle_numbers")])
    assert err.path == "tasks[1].name" and "tasks[0] already reports as pack 'needle_numbers'" in str(err)


def test_distinct_names_load(tmp_path: Path) -> None:
    data = _data(tmp_path)
    cfg = load_config(_config(tmp_path, [DOC_FIELDS, _files(data), _files(data, name="invoices")]))
    assert [getattr(t.params, "name", t.pack) for t in cfg.tasks] == ["doc_fields", "files", "invoices"]


def _key(tmp_path: Path, data: Path, **over: Any) -> str:
    cfg = parse_config({"name": "k", "model": "x.gguf", "tasks": [_files(data, **over)]}, file=tmp_path / "k.yaml")
    return run_key(key_payload(cfg, SOURCE, "cpu", "float32"))


def test_the_key_follows_the_content_not_the_place(tmp_path: Path) -> None:
    here = _data(tmp_path / "a")
    there = tmp_path / "elsewhere" / "deeper" / "docs.jsonl"
    there.parent.mkdir(parents=True)
    shutil.copyfile(here, there)
    cfg = parse_config({"name": "k", "model": "x.gguf", "tasks": [_files(here)]}, file=tmp_path / "k.yaml")
    payload = key_payload(cfg, SOURCE, "cpu", "float32")
    assert "path" not in payload["tasks"][0]["params"]
    assert payload["tasks"][0]["params"]["data_sha256"] == cfg.tasks[0].params.data_sha256
    assert str(here) not in json.dumps(payload)
    assert _key(tmp_path, there) == _key(tmp_path, here)
    # the manifest's copy of the parameters keeps the path, for humans
    assert cfg.tasks_dump()[0]["path"] == str(here)


def test_one_edited_byte_changes_the_key(tmp_path: Path) -> None:
    here = _data(tmp_path / "a")
    before = _key(tmp_path, here)
    raw = here.read_bytes()
    here.write_bytes(raw.replace(b"5.00.", b"5.01."))
    assert _key(tmp_path, here) != before


def test_name_and_questions_are_in_the_key(tmp_path: Path) -> None:
    data = _data(tmp_path)
    base = _key(tmp_path, data)
    assert _key(tmp_path, data, name="invoices") != base
    assert _key(tmp_path, data, date_order="mdy") != base


def test_other_packs_key_all_their_parameters(tmp_path: Path) -> None:
    cfg = parse_config({"name": "k", "model": "x.gguf", "tasks": [NEEDLE]}, file=tmp_path / "k.yaml")
    assert cfg.tasks[0].params.key_dump() == cfg.tasks[0].params.model_dump(mode="json")
