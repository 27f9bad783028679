"""Acceleration methods, one module each, registered by their config key."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from evalrun.runners.accel.base import AccelSettings, Acceleration, model_at

_METHODS: dict[str, type[Acceleration]] = {}


def register(cls: type[Acceleration]) -> type[Acceleration]:
    _METHODS[cls.name] = cls
    return cls


def all_methods() -> dict[str, type[Acceleration]]:
    _load_builtin()
    return dict(_METHODS)


def _load_builtin() -> None:
    from evalrun.runners.accel import kv_cache, sparsity, speculative, weights  # noqa: F401


def validate_accelerations(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Validate the `acceleration:` mapping into normalised settings dicts.

    Raises ValueError("<key path>: <message>") for the config loader to place.
    """
    methods = all_methods()
    out: dict[str, dict[str, Any]] = {}
    for name, settings in raw.items():
        if name not in methods:
            raise ValueError(f"{name}: unknown acceleration; available: {', '.join(sorted(methods))}")
        if settings is None:
            settings = {}
        if not isinstance(settings, dict):
            raise ValueError(f"{name}: must be a mapping of settings")
        model = methods[name].settings_model
        try:
            out[name] = model.model_validate(settings).model_dump(mode="json")
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err.get("loc", ()))
            path = f"{name}.{loc}" if loc else name
            if err.get("type") == "extra_forbidden":
                owner = model_at(model, tuple(err.get("loc", ()))[:-1]) or model
                msg = f"unknown key; allowed: {', '.join(sorted(owner.model_fields))}"
            elif err.get("type") == "literal_error":
                msg = f"invalid value {err.get('input')!r}; allowed: {err.get('ctx', {}).get('expected', '')}"
            else:
                msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            raise ValueError(f"{path}: {msg}") from None
    return out


def build_accelerations(settings: dict[str, dict[str, Any]]) -> list[Acceleration]:
    """Instantiate the validated methods of one run, in a stable order."""
    methods = all_methods()
    return [methods[name](methods[name].settings_model.model_validate(s)) for name, s in sorted(settings.items())]


__all__ = ["AccelSettings", "Acceleration", "all_methods", "build_accelerations", "register", "validate_accelerations"]
