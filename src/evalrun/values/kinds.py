"""Reading a string as a field type: a gold's one value, and whether the string says
"no value". The types themselves are in values/types/ (one file each), found by
`evalrun.values.registry`.

The scorer (`evalrun.evals.scoring.fields`) and the packs that check their golds before
a run (`evalrun.tasks.files._gold`) both read through here, so a gold a pack
accepts is exactly a gold the scorer can compare against.
"""

from __future__ import annotations

from typing import Any

from evalrun.values.registry import field_type, type_names
from evalrun.values.types._base import FieldType

KINDS = type_names()


def gold_value(kind: str | FieldType, gold: str, opts: dict[str, Any]) -> Any:
    """The gold's one typed value, or None when the reference does not parse as `kind`
    (the scorer then compares it as plain text), including a date that the field's
    `date_order` leaves ambiguous. ValueError for a bad `date_order`."""
    return field_type(kind).read_gold(gold, opts)


def states_no_value(kind: str | FieldType, s: str) -> bool:
    """FieldType.states_no_value, by the type's name."""
    return field_type(kind).states_no_value(s)


def is_absent_value(kind: str | FieldType, s: str, opts: dict[str, Any]) -> bool:
    """Does `s` (a gold or an answer) say there is no value? An allowed enum value
    ("none") never does; a typed answer that starts with a marker and has no digit
    ("Not found in the document.") does."""
    return field_type(kind).says_absent(s, opts)


def with_locale(kind: str | FieldType, options: dict[str, Any], locale: str | None) -> dict[str, Any]:
    """The options with `locale` set and what it decides written out (FieldType.with_locale):
    `decimal` for an amount or number, `date_order` for a date, where the options do not give it."""
    return field_type(kind).with_locale(options, locale)
