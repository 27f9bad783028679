"""Which packs exist: each module or package here with a `SPEC`, imported by name (adding a pack is one file)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from evalrun.contract.registry import Registry, folder_modules
from evalrun.tasks.base import PackSpec


def _scan() -> Iterator[tuple[str, PackSpec]]:
    # modules that hold no pack: the registry itself and the shared definitions
    for module in folder_modules(Path(__file__).resolve().parent, "evalrun.tasks", skip=("registry", "base")):
        spec = getattr(module, "SPEC", None)
        if isinstance(spec, PackSpec):
            yield spec.name, spec


_PACKS: Registry[PackSpec] = Registry("pack", _scan)


def register(spec: PackSpec) -> PackSpec:
    """Add a pack defined outside this folder (a plugin, a test); the folder's own are found."""
    return _PACKS.register(spec.name, spec)


def get_pack(name: str) -> PackSpec:
    found = _PACKS.find(name)
    if found is None:
        raise KeyError(f"unknown pack {name!r}; available: {', '.join(sorted(_PACKS.names()))}") from None
    return found


def all_packs() -> dict[str, PackSpec]:
    return dict(_PACKS.items())
