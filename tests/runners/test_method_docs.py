"""Every registered method is documented where a user looks: a row of the settings table
in the manual's accelerations page (docs/accelerations.md), an example config in configs/
that loads, and a line in
`evalrun accelerations`. Parametrized from the registry, so a new method is checked by
being added."""

from __future__ import annotations

import re

import pytest
import yaml

from evalrun.evals.config import load_config
from evalrun.runners.accel import all_methods
from tests.conftest import CONFIGS, ROOT

METHODS = sorted(all_methods())


def _configs_using(name: str) -> list:
    found = []
    for path in sorted(CONFIGS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        if name in (data.get("acceleration") or {}):
            found.append(path)
    return found


@pytest.mark.parametrize("name", METHODS)
def test_each_method_has_a_docs_row_and_an_example_config_that_loads(name: str) -> None:
    page = (ROOT / "docs" / "accelerations.md").read_text(encoding="utf-8")
    assert re.search(rf"^\| `{re.escape(name)}` \|", page, re.M), f"docs/accelerations.md has no row for {name}"
    paths = _configs_using(name)
    assert paths, f"no example config in configs/ uses {name}"
    for path in paths:
        assert name in load_config(path).acceleration


def test_evalrun_accelerations_lists_every_method() -> None:
    from typer.testing import CliRunner

    from evalrun.cli import app

    res = CliRunner().invoke(app, ["accelerations"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    out = res.output
    for name in METHODS:
        assert re.search(rf"\b{re.escape(name)}\b", out), name
