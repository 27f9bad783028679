"""One registry for every plug-in kind (field types, packs, accelerations): entries are found on first
use by importing a folder's modules, so adding one is adding a file and the import graph stays a tree."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Callable, Generic, Iterable, Iterator, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one kind. `scan(package, folder, found)` names where they live: `found(module)`
    yields the module's entries (each with `.name`, or given as (name, entry) pairs)."""

    def __init__(self, what: str, scan: Callable[[], Iterable[tuple[str, T]]] | None = None):
        self.what = what
        self._scan = scan
        self._entries: dict[str, T] = {}
        self._scanned = scan is None

    def register(self, name: str, entry: T) -> T:
        """Add one entry (a plug-in defined outside the folder, a test); a name taken is an error."""
        if name in self._entries:
            raise RuntimeError(f"two {self.what}s are named {name!r}: {self._entries[name]} and {entry}")
        self._entries[name] = entry
        return entry

    def decorator(self, name: str) -> Callable[[T], T]:
        return lambda entry: self.register(name, entry)

    def _all(self) -> dict[str, T]:
        if not self._scanned:
            self._scanned = True
            found: dict[str, T] = {}
            for name, entry in self._scan():  # type: ignore[misc]
                if name in found:
                    raise RuntimeError(f"two {self.what}s are named {name!r}: {found[name]} and {entry}")
                found[name] = entry
            for name, entry in found.items():
                self._entries.setdefault(name, entry)
        return self._entries

    def get(self, name: str) -> T:
        """The entry registered as `name`; KeyError naming the known ones for any other."""
        try:
            return self._all()[name]
        except (KeyError, TypeError):
            raise KeyError(f"unknown {self.what} {name!r}; expected one of {', '.join(self.names())}") from None

    def find(self, name: str) -> T | None:
        return self._all().get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._all())

    def items(self) -> Iterator[tuple[str, T]]:
        return iter(dict(self._all()).items())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._all()


def folder_modules(folder: Path, package: str, skip: Iterable[str] = ()) -> Iterator[ModuleType]:
    """Every module of `folder` in name order, except names starting with '_' and those in `skip`."""
    skipped = set(skip)
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in skipped:
            continue
        yield importlib.import_module(f"{package}.{info.name}")
