"""Which packs exist: every module or package of this folder that defines a
module-level `SPEC` (a PackSpec) is a pack, found by listing the folder, so adding
a pack is one new file (or one new folder, for a pack of several concerns whose
`__init__` re-exports its SPEC) and no module imports the packs by name.

The packs are imported by name string (importlib), never by an import statement,
so the registry sits below them and they need nothing from it: the import graph
stays a tree (registry -> base; pack -> base).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from evalrun.tasks.base import PackSpec

_HERE = Path(__file__).resolve().parent
_PACKAGE = __name__.rpartition(".")[0]  # "evalrun.tasks"
# modules that hold no pack: the registry itself and the shared definitions
_NOT_PACKS = frozenset({"__init__", "registry", "base"})

_PACKS: dict[str, PackSpec] = {}
_discovered = False


def register(spec: PackSpec) -> PackSpec:
    """Add a pack defined outside this folder (a plugin, a test); the folder's own are found."""
    _PACKS[spec.name] = spec
    return spec


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    found: dict[str, PackSpec] = {}
    for info in sorted(pkgutil.iter_modules([str(_HERE)]), key=lambda m: m.name):
        if info.name in _NOT_PACKS or info.name.startswith("_"):
            continue
        spec = getattr(importlib.import_module(f"{_PACKAGE}.{info.name}"), "SPEC", None)
        if isinstance(spec, PackSpec):
            if spec.name in found:
                raise RuntimeError(f"two modules define pack {spec.name!r}")
            found[spec.name] = spec
    for name, spec in found.items():
        _PACKS.setdefault(name, spec)
    _discovered = True


def get_pack(name: str) -> PackSpec:
    _discover()
    try:
        return _PACKS[name]
    except KeyError:
        raise KeyError(f"unknown pack {name!r}; available: {', '.join(sorted(_PACKS))}") from None


def all_packs() -> dict[str, PackSpec]:
    _discover()
    return dict(_PACKS)
