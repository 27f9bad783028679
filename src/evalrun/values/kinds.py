"""Reading a string as a field type: a gold's one value, and whether the string says
"no value". The types themselves are in values/types/ (one file each), found by
`evalrun.values.registry`.

The scorer (`evalrun.evals.scoring.fields`) and the packs that check their golds before
a run (`evalrun.tasks.files._gold`) both read through here, so a gold a pack
accepts is exactly a gold the scorer can compare against.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from functools import lru_cache
from typing import Any

from evalrun.values.absent import is_absent
from evalrun.values.dates import mask_dates
from evalrun.values.enums import enum_lookup
from evalrun.values.registry import field_type, type_names
from evalrun.values.text import norm_text, prep, word_count

KINDS = type_names()


def gold_value(kind: str, gold: str, opts: dict[str, Any]) -> Any:
    """The gold's one typed value, or None when the reference does not parse as `kind`
    (the scorer then compares it as plain text), including a date that the field's
    `date_order` leaves ambiguous. ValueError for a bad `date_order`."""
    t = field_type(kind)
    key = t.gold_key(opts)
    if key is None or len(gold) > 256:
        return t.gold(gold, opts)
    return _gold_cached(kind, gold, key)  # references repeat across runs and models: cache them


@lru_cache(maxsize=65536)
def _gold_cached(kind: str, gold: str, key: Hashable) -> Any:
    return field_type(kind).gold(gold, dict(key))  # type: ignore[call-overload]


_VALUE_START = re.compile(r"(?<![\w\-/.])[-+\u2212(]?[$€£¥]?[0-9]")


def states_no_value(kind: str, s: str) -> bool:
    """A sentence (more than three words) where no token could even be a damaged value of
    the kind: none starts with a digit once dates are masked (dates are a date field's
    values). "Exporter: Kestrel Optics GmbH, EORI DE1234567890123" states no amount (its
    digits belong to an id), while "The total is 14,851.2O" states a damaged one."""
    if word_count(s) <= 3:
        return False
    t = prep(s)
    # a date is a value of a date field, and may be (a wrong) one of an id field
    return not _VALUE_START.search(t if kind in ("date", "id") else mask_dates(t))


def is_absent_value(kind: str, s: str, opts: dict[str, Any]) -> bool:
    """Does `s` (a gold or an answer) say there is no value? An allowed enum value
    ("none") never does; a typed answer that starts with a marker and has no digit
    ("Not found in the document.") does."""
    if kind == "enum" and norm_text(s) in enum_lookup(opts)[0]:
        return False  # "none" may be a legitimate enum value
    return is_absent(s, prefix_rule=field_type(kind).typed)
