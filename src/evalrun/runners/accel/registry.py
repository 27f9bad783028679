"""The acceleration registry: every method module in runners/accel/, by its config key."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

from evalrun.runners.accel.base import Acceleration, settings_label
from evalrun.runners.accel.discover import subclasses


@lru_cache(maxsize=1)
def _methods() -> dict[str, type[Acceleration]]:
    out: dict[str, type[Acceleration]] = {}
    for cls in subclasses(Acceleration):
        if cls.name in out:
            raise RuntimeError(f"two acceleration methods are named {cls.name!r}: {out[cls.name]} and {cls}")
        out[cls.name] = cls
    return out


def all_methods() -> dict[str, type[Acceleration]]:
    """Method class by config key."""
    return dict(_methods())


def method_class(name: str) -> type[Acceleration] | None:
    """The class of the method configured as `name`, or None (a run stored by a method since removed)."""
    return _methods().get(name)


def method_label(accelerations: dict[str, Any]) -> str:
    """The configured accelerations with their main settings, e.g. "kv_cache (int4 quanto)"; "none" without.
    A stored run's method that is no longer registered is labelled by the common settings keys."""
    if not accelerations:
        return "none"
    parts = []
    for name, settings in accelerations.items():
        cls = method_class(name)
        if not isinstance(settings, dict):
            parts.append(f"{name} ({settings})")
        elif cls is not None:
            parts.append(cls.label(settings))
        else:
            parts.append(settings_label(name, settings, Acceleration.label_keys))
    return ", ".join(parts)


def headlines(effects: dict[str, Any]) -> list[str]:
    """Each method's headline effects as "name: fact, fact" (methods not registered show none)."""
    out = []
    for name, eff in effects.items():
        cls = method_class(name)
        facts = cls.headline(eff) if cls is not None and isinstance(eff, dict) else []
        if facts:
            out.append(f"{name}: " + ", ".join(facts))
    return out


def kv_bytes_ratio(effects: dict[str, Any]) -> tuple[float, list[str]] | None:
    """The measured KV bytes stored / full precision of a run's methods (their product) and the
    methods that measured one; None when no method changed the cache."""
    ratio, who = 1.0, []
    for name, eff in effects.items():
        cls = method_class(name)
        got = cls.kv_bytes_ratio(eff) if cls is not None and isinstance(eff, dict) else None
        if isinstance(got, (int, float)) and not isinstance(got, bool) and got > 0:
            ratio *= float(got)
            who.append(name)
    return (ratio, who) if who else None
