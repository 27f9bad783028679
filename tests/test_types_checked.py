"""mypy passes over the whole package, with the project's configuration (pyproject
`[tool.mypy]`: the pydantic plugin, strict on the contract and the public API).
mypy caches in .mypy_cache, so a run after the first checks only what changed."""

from __future__ import annotations

import tomllib

import pytest

from tests.conftest import ROOT
from tests.typecheck import package_dirs, run_mypy


@pytest.mark.slow  # a minute or more without a mypy cache, as on a fresh clone
def test_mypy_passes() -> None:
    res = run_mypy(timeout=900)
    errors = [line for line in res.stdout.splitlines() if ": error:" in line]
    assert res.returncode == 0 and not errors, (
        f"mypy exit {res.returncode}, {len(errors)} error(s):\n" + "\n".join(errors or [res.stdout, res.stderr]))


def test_strict_on_contract_and_api() -> None:
    """The strict override names the contract and the public API, and sets every flag of --strict
    that can be set per module (`strict = true` there would turn them on for every module)."""
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    strict = next(o for o in mypy["overrides"] if o.get("disallow_untyped_defs"))
    import evalrun

    public = {"evalrun", "evalrun.contract.*", *evalrun._EXPORTS.values()}  # the modules the API exports from
    assert public <= set(strict["module"]), sorted(public - set(strict["module"]))
    for flag in ("disallow_any_generics", "disallow_subclassing_any", "disallow_untyped_calls",
                 "disallow_incomplete_defs", "check_untyped_defs", "disallow_untyped_decorators",
                 "warn_return_any", "strict_equality", "extra_checks"):
        assert strict.get(flag) is True, flag
    assert strict.get("implicit_reexport") is False
    assert mypy["warn_unused_ignores"] is True and "pydantic.mypy" in mypy["plugins"]


def test_package_is_typed() -> None:
    """py.typed ships with the package (PEP 561), so users' type checkers read its annotations."""
    assert (package_dirs()["evalrun"] / "py.typed").is_file()
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "py.typed" in setuptools["package-data"]["evalrun"]
