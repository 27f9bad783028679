"""Checking the `files` pack's golds before a run: a missing gold makes a decoy (an empty answer then scores
correct), so it must be chosen (`nullable`); a present gold must read as its type, as the scorer reads it."""

from __future__ import annotations

from typing import Any, Callable

from evalrun.tasks.base import ParamError
from evalrun.tasks.files._data import Rows, is_empty
from evalrun.values.text import coerce
from evalrun.values.registry import field_type


def gold_text(value: Any) -> tuple[str | None, str | None]:
    """(gold text or None, problem or None): integers written out in full, decimals as written; no objects."""
    if is_empty(value):
        return None, None
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):  # numpy scalars
        try:
            value = value.item()
        except (TypeError, ValueError):
            pass
    if hasattr(value, "tolist") and not isinstance(value, str):  # numpy arrays from parquet
        value = value.tolist()  # pyright: ignore[reportAttributeAccessIssue]
    text, note = coerce(value)
    if note == "nonscalar":
        return None, "is a JSON object or nested list, not a single value"
    return (None, None) if text is None or not text.strip() else (text.strip(), None)


def _label(rows: Rows, index: int, ids: list[str | None] | None) -> str:
    label = rows.where(index)
    if ids and ids[index] is not None:
        label += f" (id {ids[index]!r})"
    return label


def check_golds(rows: Rows, fields: dict[str, str], gold_columns: dict[str, str], options: dict[str, dict[str, Any]],
                nullable: set[str], source: str, ids: list[str | None] | None,
                row_options: Callable[[int], dict[str, dict[str, Any]] | None] | None = None,
                ) -> list[list[str | None]]:
    """Each row's gold per field (None only where nullable), read with the row's own options where `row_options`
    gives them; the first bad gold is a ParamError at `fields.NAME` naming the file, row and column."""
    golds: list[list[str | None]] = []
    types = {name: field_type(typename) for name, typename in fields.items()}  # the scorer's own gold reading
    for index, row in enumerate(rows.rows):
        out: list[str | None] = []
        in_row = (row_options(index) if row_options else None) or options
        for name, t in types.items():
            column = gold_columns.get(name, name)
            opts = t.options(in_row.get(name, {}))
            raw = row.get(column)
            text, problem = gold_text(raw)
            where = f"{source}: {_label(rows, index, ids)}, column {column!r}"
            if problem:
                raise ParamError(f"{where}: the gold {problem}", f"fields.{name}")
            if text is None or t.says_absent(text, opts):
                if name in nullable:
                    out.append(None)
                    continue
                shown = "missing" if raw is None else f"empty ({_short(raw)})"
                raise ParamError(
                    f"{where}: the gold is {shown}; give every row a {name} value, or list the field under "
                    f"`nullable: [{name}]` to score rows without one as decoys (an empty answer is then correct)",
                    f"fields.{name}")
            if (value := t.read_gold(text, opts)) is None or not t.gold_accepted(value, opts):
                raise ParamError(f"{where}: the gold {_short(text)} is not {t.noun} "
                                 f"(field type {t.name})", f"fields.{name}")
            out.append(text)
        golds.append(out)
    return golds


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
