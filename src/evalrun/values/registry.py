"""The field-type registry: each module of values/types/ with a FieldType; scorer and packs read through it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrun.contract.registry import Registry, folder_modules
from evalrun.values.types._base import INTERNAL_OPTIONS, FieldType


def _scan() -> Iterator[tuple[str, FieldType[Any]]]:
    seen: dict[str, type] = {}
    for module in folder_modules(Path(__file__).resolve().parent / "types", "evalrun.values.types"):
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, FieldType) and obj is not FieldType
                    and obj.__module__ == getattr(module, "__name__") and "name" in vars(obj)):
                if obj.name in seen:
                    raise RuntimeError(f"two field types are named {obj.name!r}: {seen[obj.name]} and {obj}")
                seen[obj.name] = obj
                yield obj.name, obj()


TYPES: Registry[FieldType[Any]] = Registry("field type", _scan)  # found once, on first use


def type_names() -> tuple[str, ...]:
    """Every registered field type's name."""
    return TYPES.names()


def typed_names() -> frozenset[str]:
    """The types whose values have a shape (digits): amount, number, date, id, ..."""
    return frozenset(n for n, t in TYPES.items() if t.typed)


def field_type(name: str | FieldType) -> FieldType:
    """The type registered as `name` (a type is itself); ValueError naming the known types for any other."""
    if isinstance(name, FieldType):
        return name
    found = TYPES.find(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"unknown field kind {name!r}; expected one of {type_names()}")
    return found


def option_problem(kind: str | FieldType, options: dict[str, Any]) -> tuple[str, str] | None:
    """(option, what is wrong) for the first option of the type the scorer cannot read; other keys unjudged."""
    return field_type(kind).option_problem(options) if options else None


def user_option_problem(kind: str, options: dict[str, Any]) -> tuple[str, str] | None:
    """As option_problem, and every key must be an option a config may set for this type."""
    allowed = field_type(kind).user_options()
    for key in options:
        if key not in allowed:
            where = [n for n, t in TYPES.items() if key in t.user_options()]
            hint = f" (it is read for {', '.join(where)} fields only)" if where else ""
            return str(key), f"not an option of {kind} fields{hint}; allowed: {', '.join(allowed)}"
    return option_problem(kind, options)


def gold_value(kind: str | FieldType, gold: str, opts: dict[str, Any]) -> Any:
    """The gold's one typed value, or None when it does not parse as `kind` (then compared as plain text),
    as for a date its `date_order` leaves ambiguous. ValueError for a bad option."""
    t = field_type(kind)
    return t.read_gold(gold, t.options(opts))


def is_absent_value(kind: str | FieldType, s: str, opts: dict[str, Any]) -> bool:
    """Does `s` say there is no value (FieldType.says_absent)? An allowed enum value ("none") never does."""
    t = field_type(kind)
    return t.says_absent(s, t.options(opts))


class FieldSpec(BaseModel):
    """A field's type and scorer options: a `files` pack field's mapping form and an imported typed field."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Any:
        if v not in TYPES:  # for config readers: the known types named
            raise ValueError(f"invalid value {v!r}; allowed: {', '.join(type_names())}")
        return v


KINDS = type_names()  # every type, found now

__all__ = ["INTERNAL_OPTIONS", "KINDS", "FieldSpec", "FieldType", "TYPES", "field_type", "gold_value",
           "is_absent_value", "option_problem", "type_names", "typed_names", "user_option_problem"]
