"""Character-level diffs of two short values, to highlight changed digits: `14851.20` -> `1485.20` marks the
dropped `1`. Levenshtein opcodes (rapidfuzz): a minimal edit script, unlike difflib, and fast enough for every
flipped field of a large run."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict
from rapidfuzz.distance import Levenshtein

Tag = Literal["equal", "replace", "insert", "delete"]

# values longer than this are free text, not field values: a character diff is noise there
MAX_DIFF_CHARS = 200
# below this similarity the value is another value altogether, not an edited gold: marking every character says nothing
MIN_SIMILARITY = 0.4


class Segment(BaseModel):
    """One run of the edit script: `a` on the gold side, `b` on the value side ("" for a delete or insert)."""

    model_config = ConfigDict(frozen=True)

    tag: Tag
    a: str
    b: str


class Op(BaseModel):
    """A non-equal opcode with its positions: a[a0:a1] became b[b0:b1]."""

    model_config = ConfigDict(frozen=True)

    tag: Tag
    a0: int
    a1: int
    b0: int
    b1: int


def opcodes(a: str, b: str) -> list[Op]:
    return [
        Op(tag=o.tag, a0=o.src_start, a1=o.src_end, b0=o.dest_start, b1=o.dest_end)  # pyright: ignore[reportArgumentType]
        for o in Levenshtein.opcodes(a, b)
        if o.tag != "equal"
    ]


def segments(a: str, b: str) -> list[Segment]:
    return [
        Segment(tag=o.tag, a=a[o.src_start : o.src_end], b=b[o.dest_start : o.dest_end])  # pyright: ignore[reportArgumentType]
        for o in Levenshtein.opcodes(a, b)
    ]


def diffable(a: str | None, b: str | None) -> bool:
    """Worth a character diff: short values similar enough that the change stands out (a dropped digit)."""
    if a is None or b is None or a == b or len(a) > MAX_DIFF_CHARS or len(b) > MAX_DIFF_CHARS:
        return False
    return Levenshtein.normalized_similarity(a, b) >= MIN_SIMILARITY
