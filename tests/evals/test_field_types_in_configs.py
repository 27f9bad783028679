"""Every registered field type (src/evalrun/values/types/) is usable wherever a config names a type: a
`files` pack field, the gate's per-type harmful-flip limits, and an import's typed fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config
from evalrun.evals.gate import DEFAULT_MAX_HARMFUL, GateConfig, PackRule, check_gate, evaluate, load_gate
from evalrun.evals.imports import load_field_map
from evalrun.evals.compare import pair
from evalrun.values.registry import field_type, type_names, typed_names
from tests.fakes.runs import scored

NAMES = type_names()


def _pack(tmp_path: Path, name: str, gold: str, options: dict[str, Any]) -> Path:
    row = {"text": f"The value is {gold}.", "v": gold}
    (tmp_path / "docs.jsonl").write_text(json.dumps(row) + "\n")
    field = {"type": name, "column": "v", "question": "What is the value?", **({"options": options} if options else {})}
    entry = {"pack": "files", "path": "docs.jsonl", "document": "{text}", "fields": {"value": field}}
    path = tmp_path / "files.yaml"
    path.write_text(yaml.safe_dump({"name": "f", "tasks": [entry]}, sort_keys=False))
    return path


@pytest.mark.parametrize("name", NAMES)
def test_every_type_is_a_files_pack_field(tmp_path: Path, name: str) -> None:
    gold, options = field_type(name).golds[0]
    params = load_config(_pack(tmp_path, name, gold, dict(options))).tasks[0].params
    assert [f.kind for f in params._fields] == [name]


def test_an_unknown_type_lists_every_registered_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_pack(tmp_path, "percentage", "19%", {}))
    assert info.value.path == "tasks[0].fields.value.type"
    assert all(n in str(info.value) for n in NAMES), str(info.value)


def test_a_checked_id_gold_that_fails_its_check_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_pack(tmp_path, "checked_id", "DE89 3704 0044 0532 0131 00", {}))
    assert info.value.path == "tasks[0].fields.value"
    assert "is not an id that passes its check digit (field type checked_id)" in str(info.value)


def test_an_option_of_a_new_type_is_checked_in_a_pack(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_pack(tmp_path, "checked_id", "DE89 3704 0044 0532 0130 00", {"scheme": "swift"}))
    assert info.value.path == "tasks[0].fields.value.options.scheme" and "iban" in str(info.value)


def _runs(kind: str, flips: int, n: int = 30):
    base = [scored(f"p/{i}", {"v": "correct"}, kinds=kind, prompt_hash=f"h{i}") for i in range(n)]
    cand = [scored(f"p/{i}", {"v": "wrong_value" if i < flips else "correct"}, kinds=kind, prompt_hash=f"h{i}")
            for i in range(n)]
    return pair(base, cand, "base", "cand", n_resamples=200)


@pytest.mark.parametrize("name", NAMES)
def test_every_type_scopes_a_gate_limit(name: str) -> None:
    gate = load_gate({"max_harmful_flips": {name: 1}})
    check_gate(gate, packs=["p"], field_names=["v"])
    gate = GateConfig(packs={"*": PackRule(max_drop=None)}, max_harmful_flips={name: 0})
    rule = next(r for r in evaluate(_runs(name, 1), gate).rules if r.rule == f"max_harmful_flips[{name}]")
    assert (rule.measured, rule.passed) == (1.0, False)


def test_typed_types_are_gated_by_default() -> None:
    assert set(DEFAULT_MAX_HARMFUL) == set(typed_names()) >= {"amount", "number", "date", "id", "percent"}
    assert not evaluate(_runs("percent", 1)).passed


@pytest.mark.parametrize("name", NAMES)
def test_every_type_is_an_import_field(tmp_path: Path, name: str) -> None:
    assert load_field_map(pairs=[f"task={name}"]).spec("task").type == name  # type: ignore[union-attr]
    path = tmp_path / "fields.yaml"
    gold, options = field_type(name).golds[0]
    path.write_text(yaml.safe_dump({"fields": {"task": {"type": name, "options": dict(options)}}}))
    field = load_field_map(path).typed_field("task", gold)
    assert field is not None and (field.kind, field.options) == (name, dict(options))


def test_import_field_errors_name_the_types_and_options(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KIND one of amount"):
        load_field_map(pairs=["task=money"])
    path = tmp_path / "fields.yaml"
    path.write_text(yaml.safe_dump({"fields": {"task": {"type": "money"}}}))
    with pytest.raises(ConfigError) as info:
        load_field_map(path)
    assert info.value.path == "fields.task.type" and "percent" in str(info.value)
    path.write_text(yaml.safe_dump({"fields": {"task": {"type": "quantity", "options": {"decimals": ","}}}}))
    with pytest.raises(ConfigError) as info:
        load_field_map(path)
    assert info.value.path == "fields.task.options.decimals" and "not an option of quantity fields" in str(info.value)
