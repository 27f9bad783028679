"""pyproject declares what the package imports, and imports what it declares.

Every import in the package's source (read with `ast`: top level, inside
functions, under TYPE_CHECKING) of a module outside the standard library must
come from a distribution named in `dependencies` or an extra; every distribution
named in `dependencies` must be imported somewhere (an extra may hold tools:
pytest, mypy, stubs). Import names map to distributions through
importlib.metadata.packages_distributions, as installed."""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from tests.conftest import ROOT

SRC = ROOT / "src" / "evalrun"

# (distribution, why no module of it is imported): needed at run time all the same
USED_WITHOUT_IMPORT = {
    "pyarrow": "pandas' Parquet engine and `string[pyarrow]` columns (src/evalrun/evals/frames.py, src/evalrun/tasks/files/_data.py)",
    "gguf": "transformers reads the default model's GGUF file with it (src/evalrun/runners/models/_models.py)",
    "accelerate": "transformers refuses to load a GGUF file without it (src/evalrun/runners/models/_models.py)",
    "hqq": "the backend of transformers' QuantizedCache 'hqq' (src/evalrun/runners/accel/kv_quant.py)",
    "python-stdnum": "its modules are imported by name (src/evalrun/values/types/checked_id.py SCHEMES)",
}


packages_distributions = functools.cache(metadata.packages_distributions)  # import name -> distributions


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(req: str) -> str:
    return _norm(re.split(r"[\s<>=!~;\[(]", req.strip(), maxsplit=1)[0])


def _declared() -> tuple[set[str], set[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = {_requirement_name(r) for r in project["dependencies"]}
    extras = {_requirement_name(r) for reqs in project.get("optional-dependencies", {}).values() for r in reqs}
    return required, extras


def _imported_roots() -> dict[str, set[str]]:
    """Top-level module name -> the source files that import it (absolute imports only)."""
    out: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                out.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return out


def _third_party() -> dict[str, set[str]]:
    return {name: files for name, files in _imported_roots().items()
            if name != "evalrun" and name not in sys.stdlib_module_names and name != "__future__"}


def test_every_import_is_declared() -> None:
    required, extras = _declared()
    dists = packages_distributions()
    missing = []
    for name, files in sorted(_third_party().items()):
        owners = {_norm(d) for d in dists.get(name, [])}
        if not owners:
            missing.append(f"{name} (not installed; imported in {', '.join(sorted(files))})")
        elif not owners & (required | extras):
            missing.append(f"{name} from {', '.join(sorted(owners))} (imported in {', '.join(sorted(files))})")
    assert not missing, "imported but not declared in pyproject's dependencies or extras:\n" + "\n".join(missing)


def test_every_dependency_is_used() -> None:
    required, _ = _declared()
    dists = packages_distributions()
    imported = {_norm(d) for name in _third_party() for d in dists.get(name, [])}
    unused = sorted(required - imported - {_norm(d) for d in USED_WITHOUT_IMPORT})
    assert not unused, f"declared in pyproject's dependencies but imported nowhere in the package: {unused}"


def test_used_without_import_are_declared() -> None:
    """The exceptions above stay true: each is still a declared dependency, not imported directly."""
    required, _ = _declared()
    dists = packages_distributions()
    imported = {_norm(d) for name in _third_party() for d in dists.get(name, [])}
    for dist in USED_WITHOUT_IMPORT:
        assert _norm(dist) in required, f"{dist} is listed as used without import but is not a dependency"
        assert _norm(dist) not in imported, f"{dist} is imported now: drop it from USED_WITHOUT_IMPORT"


def test_every_package_folder_ships_in_the_wheel() -> None:
    """setuptools finds the packages under src/ (pyproject `packages.find`): every folder with an
    __init__.py is a package the wheel ships, and nothing outside src/evalrun is one of ours."""
    import setuptools

    find = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]["find"]
    found = set(setuptools.find_packages(str(ROOT / find["where"][0]), include=find["include"]))
    on_disk = {".".join(p.parent.relative_to(ROOT / "src").parts) for p in SRC.rglob("__init__.py")}
    assert on_disk - found == set() and found - on_disk == set(), (sorted(on_disk ^ found))
    assert found == {p for p in found if p == "evalrun" or p.startswith("evalrun.")}
