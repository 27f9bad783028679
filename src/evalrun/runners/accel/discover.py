"""Find the classes defined in the modules of this folder, by importing each module.

Methods and eviction policies are one file each: nothing lists them, so adding
one touches no other file, and no module imports the package that collects it
(the registry imports them by name, which is no import cycle).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_FOLDER = Path(__file__).resolve().parent
_PACKAGE = __name__.rpartition(".")[0]


def subclasses(base: type[T], package: str = _PACKAGE) -> list[type[T]]:
    """Every concrete subclass of `base` with its own `name`, defined in a public module of `package`
    (this folder by default; the eviction policies are in accel/evict/), in module-name order."""
    found: list[type[T]] = []
    folder = _FOLDER if package == _PACKAGE else Path(next(iter(importlib.import_module(package).__path__)))
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda m: m.name):
        if info.ispkg or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, base) and obj is not base
                    and obj.__module__ == module.__name__ and "name" in vars(obj)):
                found.append(obj)
    return found
