"""Degenerate repetition ("2023-2024, 2023-2024, ...") until the answer is cut off: a reviewer reads no answer."""

from __future__ import annotations

import re

# a unit of 2-24 characters, then at least three more copies of it right after
_LOOP = re.compile(r"(.{2,24}?)\1{3,}", re.DOTALL)
# one character (not a digit or a space) six or more times: "ラララララ", "------"
_CHAR_RUN = re.compile(r"[^\d\s]?([^\d\s])\1{5,}")
# a thousands group ("1,000,000", lakh "1,00,00,00,00") is no loop; ".22.22.22.22" (two digits after dots) is
_DIGIT_GROUP = re.compile(r"^(?:[.,'\s\u00a0\u202f]\d{3}|\d{3}[.,'\s\u00a0\u202f]|,\d{2}|\d{2},)$")
_SEPARATOR = re.compile(r"[^\w]")
_DIGIT = re.compile(r"\d")
_MARKER = re.compile(r"^\(?\d{1,2}[.)]$")
_ALNUM = re.compile(r"[^\W_]")
_GLUED_TOKEN = re.compile(r"(?<!\S)[^\W_][\w./]*[-/.]\Z")  # "2100-" right before a loop's first copy
_OPERATOR_FIRST = re.compile(r"\s*[-+×x*/]\s*\d")  # a unit " + 20", "x 12"
_TERM_BEFORE = re.compile(r"(?<![\w.,])\d[\d.,]*\s*\Z")  # the sum's first term, "30 " before " + 20 + 20"


def _is_loop_unit(unit: str) -> bool:
    """Words and separators mixed, or letters alone: a digit run ("0000") is one long number, not a loop."""
    if not _DIGIT.search(unit):
        return bool(_ALNUM.search(unit))
    return bool(_SEPARATOR.search(unit) and _ALNUM.search(unit)) and not _DIGIT_GROUP.match(unit)


def is_list_marker_loop(unit: str) -> bool:
    """ "1. 1. 1. 1." loops on a list marker: it restates no value."""
    return bool(_MARKER.match(unit.strip()))


def loop_spans(text: str) -> list[tuple[int, int, str]]:
    """Each loop in `text`: (start, end, unit). A loop never starts inside a number (" + 20", not "0 + 2");
    one whose first copy is glued to the token before it takes that token as its first unit."""
    if len(text) < 8:
        return []
    found = []
    pos = 0
    while (m := _LOOP.search(text, pos)) is not None:
        start, unit = m.start(), m[1]
        if start and text[start - 1].isdigit() and unit[0].isdigit():
            pos = start + 1  # inside a number: the loop, if any, starts later
            continue
        pos = m.end()
        if not _is_loop_unit(unit):
            continue
        if (glued := _GLUED_TOKEN.search(text, 0, start)) is not None and _ALNUM.match(unit):
            unit, start = text[glued.start():start] + unit, glued.start()
        elif _OPERATOR_FIRST.match(unit) and (term := _TERM_BEFORE.search(text, 0, start)) is not None:
            start = term.start()
        found.append((start, _cut_copy_end(text, m.end(), m[1]), unit))
    found += [(m.start(), m.end(), m[1]) for m in _CHAR_RUN.finditer(text)]
    return found


def _cut_copy_end(text: str, end: int, unit: str) -> int:
    """The end of a loop with the cut-off copy after it ("... 2023-2024, 2")."""
    n = 0
    while n < len(unit) - 1 and end + n < len(text) and text[end + n] == unit[n]:
        n += 1
    return end + n


def mask_loops(text: str) -> tuple[str, list[str]]:
    """`text` with every loop blanked (same length, so spans still line up), and the loops' units."""
    spans = loop_spans(text)
    if not spans:
        return text, []
    chars = list(text)
    for start, end, _ in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars), [unit for _, _, unit in spans]


def collapse_loops(text: str) -> str:
    """`text` with each loop written once: a loop restating one value reads as the line it repeats."""
    out, at = [], 0
    for start, end, unit in sorted(loop_spans(text)):
        if start >= at:
            out += [text[at:start], unit]
            at = end
    return "".join(out) + text[at:]
