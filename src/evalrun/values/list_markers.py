"""List markers opening a line ("1.", "2)", "(3)", "a)", "-", "•", outline "1.1.2"): never a value of the field."""

from __future__ import annotations

import re

_BULLET = re.compile(r"(?m)^[ \t]*(?P<mark>[-*•‣◦·\u2013\u2014])(?=[ \t]+\S)")
_NUMBERED = re.compile(
    r"(?m)^[ \t]*(?P<mark>(?P<n>[0-9]{1,2}|[A-Za-z])[.)]|\((?P<p>[0-9]{1,2}|[A-Za-z])\))(?=[ \t]+\S)"
)


# an outline number opening a line, alone or after an item's marker ("1. 1.1.1.2"): four to
# six groups of one or two digits, which no number or date has
_OUTLINE = re.compile(
    r"(?m)^[ \t]*(?:(?:[0-9]{1,2}|[A-Za-z])[.)][ \t]+)?(?P<mark>[0-9]{1,2}(?:\.[0-9]{1,2}){3,5}\.?)(?=[ \t]*$|[ \t]+\S)"
)
_ANY = re.compile(r"(?m)^[ \t]*(?:[-*•‣◦·\u2013\u2014]|\(?[0-9A-Za-z]{1,2}[.)])[ \t]+\S")


def _blank(t: str, spans: list[tuple[int, int]]) -> str:
    chars = list(t)
    for s, e in spans:
        chars[s:e] = " " * (e - s)
    return "".join(chars)


def list_marker_spans(t: str, outline: bool = True) -> list[tuple[int, int]]:
    """The markers opening the lines of `t`: a bullet and a space always ("- EUR 5" is not minus five); a number or
    letter when two or more lines are numbered or it is "1"/"a" ("24. It is due." states 24). `outline`: those too."""
    if outline and t.count(".") >= 3 and _OUTLINE.search(t):
        return _spans(t) + [m.span("mark") for m in _OUTLINE.finditer(t)]
    return _spans(t)


def _spans(t: str) -> list[tuple[int, int]]:
    if not _ANY.search(t):
        return []
    spans = [m.span("mark") for m in _BULLET.finditer(t)]
    numbered = list(_NUMBERED.finditer(t))
    if len(numbered) >= 2:
        spans += [m.span("mark") for m in numbered]
    elif numbered and (numbered[0]["n"] or numbered[0]["p"]) in ("1", "a", "A"):
        spans.append(numbered[0].span("mark"))
    return spans


def mask_list_markers(t: str, outline: bool = True) -> str:
    """`t` with list markers blanked (same length); without `outline`, outline numbers (a cut repeat's) stay."""
    spans = list_marker_spans(t, outline)
    return _blank(t, spans) if spans else t
