"""The field-type registry: every module of values/types/ that defines a FieldType.

Nothing lists the types: the registry imports each module of the folder by name
(no import cycle: a type module never imports the registry), so adding a type is
adding one file. Names are in module order, which is alphabetical.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

from evalrun.values.types._base import INTERNAL_OPTIONS, FieldType

_FOLDER = Path(__file__).resolve().parent / "types"
_PACKAGE = "evalrun.values.types"


_REGISTRY: dict[str, FieldType] = {}


def _discover() -> dict[str, FieldType]:
    out: dict[str, FieldType] = {}
    for info in sorted(pkgutil.iter_modules([str(_FOLDER)]), key=lambda m: m.name):
        if info.ispkg or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_PACKAGE}.{info.name}")
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, FieldType) and obj is not FieldType
                    and obj.__module__ == module.__name__ and "name" in vars(obj)):
                if obj.name in out:
                    raise RuntimeError(f"two field types are named {obj.name!r}: {type(out[obj.name])} and {obj}")
                out[obj.name] = obj()
    return out


def _types() -> dict[str, FieldType]:
    if not _REGISTRY:  # found once, on first use; the scorer then only looks names up
        _REGISTRY.update(_discover())
    return _REGISTRY


def type_names() -> tuple[str, ...]:
    """Every registered field type's name."""
    return tuple(_types())


def typed_names() -> frozenset[str]:
    """The types whose values have a shape (digits): amount, number, date, id, ..."""
    return frozenset(n for n, t in _types().items() if t.typed)


def field_type(name: str) -> FieldType:
    """The type registered as `name`; ValueError naming the known types for any other."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        if _REGISTRY or name not in _types():
            raise ValueError(unknown_type_message(name)) from None
        return _REGISTRY[name]


def check_type_name(name: Any) -> str:
    """`name` when it is a registered type; else ValueError naming the known types (for config readers)."""
    if not isinstance(name, str) or name not in _types():
        raise ValueError(f"invalid value {name!r}; allowed: {', '.join(type_names())}")
    return name


def unknown_type_message(name: Any) -> str:
    return f"unknown field kind {name!r}; expected one of {type_names()}"


def option_problem(kind: str, options: dict[str, Any]) -> tuple[str, str] | None:
    """(option, what is wrong) for the first option of this type the scorer cannot read, else
    None. Keys that are no option of the type are not judged (score_field ignores them)."""
    return field_type(kind).option_problem(options) if options else None


def user_option_problem(kind: str, options: dict[str, Any]) -> tuple[str, str] | None:
    """As option_problem, and every key must be an option a config may set for this type."""
    allowed = field_type(kind).user_options()
    for key in options:
        if key not in allowed:
            where = [n for n, t in _types().items() if key in t.user_options()]
            hint = f" (it is read for {', '.join(where)} fields only)" if where else ""
            return str(key), f"not an option of {kind} fields{hint}; allowed: {', '.join(allowed)}"
    return option_problem(kind, options)


__all__ = ["INTERNAL_OPTIONS", "FieldType", "check_type_name", "field_type", "option_problem", "type_names",
           "typed_names", "unknown_type_message", "user_option_problem"]
