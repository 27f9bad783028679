"""Where a value found in prepared text sits in the answer as written: spans point at the model's own text."""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from evalrun.values.text import CACHE_MAX_LEN, prep


def _offsets(s: str) -> tuple[int, ...] | None:
    """For each index of prep(s) (and its end), the index in `s` it came from; None when
    NFKC joins across the clusters used here (a base letter and its combining marks)."""
    if s.isascii():
        return None
    out: list[int] = []
    i = 0
    while i < len(s):
        j = i + 1
        while j < len(s) and unicodedata.combining(s[j]):
            j += 1
        out.extend([i] * len(unicodedata.normalize("NFKC", s[i:j])))
        i = j
    if len(out) != len(prep(s)):
        return (-1,)
    out.append(len(s))
    return tuple(out)


_offsets_cached = lru_cache(maxsize=4096)(_offsets)
# an answer's every span maps through one table: a long one is kept too (a few, so that
# megabytes are never pinned), or each span would rebuild it and the answer cost n * spans
_offsets_long = lru_cache(maxsize=4)(_offsets)


def to_original(s: str, start: int, end: int) -> tuple[int, int]:
    """(start, end) in `s` of the span (start, end) of prep(s). Where NFKC cannot be undone
    cluster by cluster (Hangul jamo, rare), the span is the whole answer."""
    table = _offsets_cached(s) if len(s) <= CACHE_MAX_LEN else _offsets_long(s)
    if table is None:
        return start, end
    if table == (-1,):
        return 0, len(s)
    end_at = table[end] if end < len(table) else len(s)
    if end > 0 and end < len(table) and table[end] == table[end - 1]:
        end_at = next((k for k in table[end:] if k != table[end - 1]), len(s))
    return table[start], end_at


def stripped(s: str) -> tuple[int, int]:
    """The span of `s` without its surrounding whitespace (a value read from the whole answer)."""
    body = s.strip()
    if not body:
        return 0, 0
    start = len(s) - len(s.lstrip())
    return start, start + len(body)
