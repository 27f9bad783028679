"""List markers ("1.", "2)", "(3)", "a)", "-", "*", "•") that open a line: they
number an answer's items and are never a value of the field."""

from __future__ import annotations

import re

_BULLET = re.compile(r"(?m)^[ \t]*(?P<mark>[-*•‣◦·\u2013\u2014])(?=[ \t]+\S)")
_NUMBERED = re.compile(
    r"(?m)^[ \t]*(?P<mark>(?P<n>[0-9]{1,2}|[A-Za-z])[.)]|\((?P<p>[0-9]{1,2}|[A-Za-z])\))(?=[ \t]+\S)"
)


_ANY = re.compile(r"(?m)^[ \t]*(?:[-*•‣◦·\u2013\u2014]|\(?[0-9A-Za-z]{1,2}[.)])[ \t]+\S")


def _blank(t: str, spans: list[tuple[int, int]]) -> str:
    chars = list(t)
    for s, e in spans:
        chars[s:e] = " " * (e - s)
    return "".join(chars)


def list_marker_spans(t: str) -> list[tuple[int, int]]:
    """The markers opening the lines of `t`. A bullet followed by a space always is
    one ("- EUR 5" is not minus five); a number or letter is one when two or more
    lines are numbered, or when it is the first item ("1.", "a)"): an answer
    "24. It is due on delivery." still states 24."""
    if not _ANY.search(t):
        return []
    spans = [m.span("mark") for m in _BULLET.finditer(t)]
    numbered = list(_NUMBERED.finditer(t))
    if len(numbered) >= 2:
        spans += [m.span("mark") for m in numbered]
    elif numbered and (numbered[0]["n"] or numbered[0]["p"]) in ("1", "a", "A"):
        spans.append(numbered[0].span("mark"))
    return spans


def mask_list_markers(t: str) -> str:
    """`t` with its list markers blanked (same length, so spans still line up)."""
    spans = list_marker_spans(t)
    return _blank(t, spans) if spans else t
