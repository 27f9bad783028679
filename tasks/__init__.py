"""Task packs: parameters -> deterministic Items. Registered by name."""

from __future__ import annotations

from evalrun.tasks.base import BuildOptions, PackDataError, PackParams, PackSpec, ParamError, TokenCounter

_PACKS: dict[str, PackSpec] = {}


def register(spec: PackSpec) -> PackSpec:
    _PACKS[spec.name] = spec
    return spec


def get_pack(name: str) -> PackSpec:
    _load_builtin()
    try:
        return _PACKS[name]
    except KeyError:
        raise KeyError(f"unknown pack {name!r}; available: {', '.join(sorted(_PACKS))}") from None


def all_packs() -> dict[str, PackSpec]:
    _load_builtin()
    return dict(_PACKS)


def _load_builtin() -> None:
    # Imported lazily so that `tasks` itself stays import-light.
    from evalrun.tasks import doc_fields, files, latency, needle_numbers  # noqa: F401


__all__ = ["BuildOptions", "PackDataError", "PackParams", "PackSpec", "ParamError", "TokenCounter", "get_pack",
           "all_packs", "register"]
