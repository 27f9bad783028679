"""mkdocs hook: give mkdocstrings a source tree it can read.

The repository keeps one top-level folder per stage and maps them into the one import name
`evalrun` with setuptools' `package-dir` (pyproject.toml). Griffe, which mkdocstrings uses to
read docstrings, finds packages on disk by folder name and cannot follow that mapping, so this
hook lays the mapping out as symbolic links under build/mkdocs-api/evalrun/ before each build:
the reference pages are read from the very files the package installs, never from copies.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the docs build runs on the dev interpreter
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "mkdocs-api"


def _link(target: Path, link: Path) -> None:
    """Point `link` at `target`, replacing it atomically (two builds may run at once)."""
    if link.is_symlink() and Path(os.readlink(link)) == target:
        return
    tmp = link.with_name(f".{link.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    os.replace(tmp, link)


def lay_out_sources() -> Path:
    """build/mkdocs-api/evalrun/: the evalrun/ folder's files and one link per mapped stage."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = pyproject["tool"]["setuptools"]["package-dir"]
    package = TREE / "evalrun"
    package.mkdir(parents=True, exist_ok=True)
    wanted = set()
    for path in (ROOT / mapping.get("evalrun", "evalrun")).iterdir():
        if path.suffix == ".py":
            wanted.add(path.name)
            _link(path, package / path.name)
    for name, folder in mapping.items():
        parts = name.split(".")
        if len(parts) == 2 and parts[0] == "evalrun":  # nested packages live inside their stage's folder
            wanted.add(parts[1])
            _link(ROOT / folder, package / parts[1])
    for stale in package.iterdir():
        if stale.name not in wanted and not stale.name.startswith("."):
            stale.unlink(missing_ok=True)
    return TREE


def on_startup(**_: Any) -> None:
    """Before any plugin reads its config: mkdocstrings drops search paths that do not exist yet."""
    lay_out_sources()
