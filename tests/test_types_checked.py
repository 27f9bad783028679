"""mypy and pyright pass over the whole package, run plainly from the repository root with the
project's configuration (pyproject `[tool.mypy]`: the pydantic plugin, strict on the contract and
the public API; `[tool.pyright]`: basic mode over src/). The folders under src/ are the import
names, so neither needs a wrapper. mypy caches in .mypy_cache, so a run after the first checks
only what changed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

BIN = Path(sys.executable).parent


def _run(tool: str, timeout: float) -> subprocess.CompletedProcess[str]:
    exe = BIN / tool if (BIN / tool).is_file() else shutil.which(tool)
    if exe is None:
        pytest.skip(f"{tool} is not installed (pip install -e '.[dev]')")
    return subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow  # a minute or more without a mypy cache, as on a fresh clone
def test_mypy_passes() -> None:
    res = _run("mypy", timeout=900)
    errors = [line for line in res.stdout.splitlines() if ": error:" in line]
    assert res.returncode == 0 and not errors, (
        f"mypy exit {res.returncode}, {len(errors)} error(s):\n" + "\n".join(errors or [res.stdout, res.stderr]))


@pytest.mark.slow  # about 3 minutes on 2 cores: pyright reads torch and transformers' sources (no cache)
def test_pyright_passes() -> None:
    res = _run("pyright", timeout=900)
    errors = [line for line in res.stdout.splitlines() if " - error:" in line]
    assert res.returncode == 0 and not errors, (
        f"pyright exit {res.returncode}, {len(errors)} error(s):\n" + "\n".join(errors or [res.stdout, res.stderr]))


def test_type_checkers_read_the_source_tree() -> None:
    """Both checkers are configured on src/, where the folders are the import names: no link tree."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    assert tool["mypy"]["mypy_path"] == "$MYPY_CONFIG_FILE_DIR/src" and tool["mypy"]["packages"] == ["evalrun"]
    assert tool["pyright"]["include"] == ["src"] and tool["pyright"]["typeCheckingMode"] == "basic"
    assert "package-dir" not in tool["setuptools"]


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
    assert (ROOT / "src" / "evalrun" / "py.typed").is_file()
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "py.typed" in setuptools["package-data"]["evalrun"]
