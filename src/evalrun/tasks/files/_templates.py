"""The `files` pack's templates, checked by formatting the first row (a placeholder scan misses `{doc!z}`)."""

from __future__ import annotations

import string
from typing import Any

from evalrun.tasks.base import PackDataError, ParamError
from evalrun.tasks.files._data import is_empty

FORMAT_ERRORS = (ValueError, KeyError, IndexError, AttributeError, TypeError)


def text_row(row: dict[str, Any]) -> dict[str, str]:
    """Cells as a template sees them: empty cells are empty text."""
    return {k: "" if is_empty(v) else str(v) for k, v in row.items()}


def check_template(template: str, key: str, first: dict[str, str], listed: str) -> None:
    """Placeholders must name columns and the template must format the first row; ParamErrors at `key`."""
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise ParamError(f"bad template: {exc}", key) from None
    if "" in names or any(n.isdigit() for n in names):
        raise ParamError("positional placeholder {} is not allowed: name a column, e.g. {doc}; "
                         "write {{ and }} for literal braces", key)
    if any("." in n or "[" in n for n in names):
        raise ParamError("placeholders name a column, e.g. {doc}; attribute and index access "
                         "({doc.x}, {doc[0]}) are not supported", key)
    missing = sorted(n for n in names if n not in first)
    if missing:
        raise ParamError(f"placeholder {{{missing[0]}}} is not a column; columns: {listed}", key)
    try:
        template.format_map(first)
    except FORMAT_ERRORS as exc:
        raise ParamError(f"template does not format ({type(exc).__name__}: {exc}); placeholders are "
                         "{column} with no conversion or format spec; write {{ and }} for literal braces", key) from None


def render(template: str, row: dict[str, str], where: str, key: str) -> str:
    """One template for one row; a row the checked template still cannot format is a PackDataError."""
    try:
        return template.format_map(row)
    except FORMAT_ERRORS as exc:
        raise PackDataError(f"{where}: the template does not format this row: {type(exc).__name__}: {exc}",
                            key) from None
