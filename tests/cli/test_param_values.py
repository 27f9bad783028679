"""`packs export --param KEY=VALUE`: values are YAML; one YAML cannot read is an exit-2 error
that says so and shows the quoting that passes it as a string."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from evalrun.cli_catalog import _parse_params
from evalrun.evals.files import ConfigError
from tests.conftest import run_cli


def test_values_are_read_as_yaml() -> None:
    assert _parse_params(["lengths=[512, 1024]", "decoys=2", "mode=json", " seed =0"]) == {
        "lengths": [512, 1024], "decoys": 2, "mode": "json", "seed": 0}


@pytest.mark.parametrize("value", ["{doc} What is the total?", "[1, 2", "{a: 1, a: 2}", '"hi" and {doc}',
                                   "{doc} it's \"here\"", "a: b: c", "tab\there: {doc} ünïcode"])
def test_an_unreadable_value_says_how_to_quote_it(value: str) -> None:
    with pytest.raises(ConfigError) as err:
        _parse_params([f"prompt={value}"])
    message = str(err.value)
    assert message.startswith("--param prompt: the value is parsed as YAML and could not be read (")
    hint = message.split("quote it as a YAML string, e.g. --param ", 1)[1]
    # the suggested argument, split as a shell would, reads back as exactly the string given
    (argument,) = shlex.split(hint)
    assert _parse_params([argument]) == {"prompt": value}


@pytest.mark.slow
def test_export_exits_2_with_the_hint(tmp_path: Path) -> None:
    res = run_cli("packs", "export", "files", "--param", "prompt={doc} What is the total?",
                  "--out", str(tmp_path / "items.jsonl"))
    assert res.returncode == 2, res.stdout + res.stderr
    flat = " ".join(res.stderr.split())
    assert "--param prompt: the value is parsed as YAML and could not be read (" in flat
    assert "quote it as a YAML string, e.g. --param 'prompt=\"{doc} What is the total?\"'" in flat, flat
    assert "cannot read value" not in flat and "Traceback" not in res.stderr
    assert not (tmp_path / "items.jsonl").exists()


@pytest.mark.slow
def test_a_pair_without_equals_is_exit_2(tmp_path: Path) -> None:
    res = run_cli("packs", "export", "needle_numbers", "--param", "lengths", "--out", str(tmp_path / "i.jsonl"))
    assert res.returncode == 2 and "--param 'lengths': expected KEY=VALUE" in " ".join(res.stderr.split())
