"""A model's JSON value (or a data file's cell) as the text a field parser reads."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any


def coerce(value: Any) -> tuple[str | None, str | None]:
    """A model's JSON value as (text or None if absent, note): "nonscalar" for an object or nested list (never a
    value); singleton lists unwrapped, longer ones joined with "; " (several values are ambiguous); empty absent."""
    for _ in range(256):
        if isinstance(value, (list, tuple)) and len(value) == 1:
            value = value[0]
        else:
            break
    if value is None:
        return None, None
    if isinstance(value, str):
        return value, None
    if isinstance(value, bool):
        return ("true" if value else "false"), None
    if isinstance(value, int):
        try:
            return str(value), None
        except ValueError:  # more digits than int->str allows
            return format(Decimal(value), "f"), None
    if isinstance(value, (float, Decimal)):
        try:
            d = Decimal(repr(value)) if isinstance(value, float) else value
            return (format(d, "f") if d.is_finite() else str(value)), None
        except (InvalidOperation, ValueError):
            return str(value), None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace"), None
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)[:100]
        if not items:
            return None, None
        if all(v is None or isinstance(v, (str, int, float, Decimal)) for v in items):
            parts = [p for p in (coerce(v)[0] for v in items) if p is not None]
            return ("; ".join(parts) if parts else None), None
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if not value:
            return None, None
        try:
            return json.dumps(value, ensure_ascii=False, default=str)[:2000], "nonscalar"
        except Exception:  # noqa: BLE001 - unprintable keys/values, sets
            return str(type(value).__name__), "nonscalar"
    try:
        return str(value), None
    except Exception:  # noqa: BLE001
        return "<unprintable>", None

