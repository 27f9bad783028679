"""The acceleration registry: every method module in runners/accel/, by its config key.

Methods and eviction policies are one file each that nothing lists; no module imports the package that
collects it (the registry imports them by name), so there is no import cycle.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, TypeVar

from evalrun.contract.registry import Registry, folder_modules
from evalrun.runners.accel.base import Acceleration, settings_label

T = TypeVar("T")


def subclasses(base: type[T], package: str = __name__.rpartition(".")[0]) -> list[type[T]]:
    """Every concrete subclass of `base` with its own `name`, defined in a public module of `package`
    (this folder by default; the eviction policies are in accel/evict/), in module-name order."""
    folder = Path(next(iter(importlib.import_module(package).__path__)))
    return [obj for module in folder_modules(folder, package) for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, base) and obj is not base
            and obj.__module__ == module.__name__ and "name" in vars(obj)]


METHODS: Registry[type[Acceleration]] = Registry(
    "acceleration method", lambda: ((cls.name, cls) for cls in subclasses(Acceleration)))


def all_methods() -> dict[str, type[Acceleration]]:
    """Method class by config key."""
    return dict(METHODS.items())


def method_class(name: str) -> type[Acceleration] | None:
    """The class of the method configured as `name`, or None (a run stored by a method since removed)."""
    return METHODS.find(name)


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
