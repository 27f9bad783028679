"""Dates in an era: Japanese imperial eras ("令和5年12月1日", "令和元年", "R5.12.1") and Minguo years ("民國113年").
A date outside its era (平成32年) is none, not a guess; "R5.12.1" forms only as a full date ("R5" is an id)."""

from __future__ import annotations

import datetime as _dt
import re
from typing import NamedTuple


class _Era(NamedTuple):
    first: _dt.date  # the era's first day
    last: _dt.date | None  # its last day, None while it lasts

    def year(self, n: int) -> int:
        return self.first.year + n - 1


_D = _dt.date
_ERAS = {
    "明治": _Era(_D(1868, 1, 1), _D(1912, 7, 29)),  # Meiji 1 is counted from the start of 1868
    "大正": _Era(_D(1912, 7, 30), _D(1926, 12, 24)),
    "昭和": _Era(_D(1926, 12, 25), _D(1989, 1, 7)),
    "平成": _Era(_D(1989, 1, 8), _D(2019, 4, 30)),
    "令和": _Era(_D(2019, 5, 1), None),
    "民國": _Era(_D(1912, 1, 1), None),
    "民国": _Era(_D(1912, 1, 1), None),
}
_LETTERS = {"M": "明治", "T": "大正", "S": "昭和", "H": "平成", "R": "令和"}

_KANJI = re.compile(
    r"(?P<era>明治|大正|昭和|平成|令和|民國|民国)\s*(?P<y>[0-9]{1,3}|元)\s*年"
    r"(?:\s*(?P<m>[0-9]{1,2})\s*月(?:\s*(?P<d>[0-9]{1,2})\s*日)?)?"
)
_LETTER = re.compile(
    r"(?<![A-Za-z0-9])(?P<era>[MTSHR])(?P<y>[0-9]{1,2})(?P<sep>[./])(?P<m>[0-9]{1,2})(?P=sep)(?P<d>[0-9]{1,2})"
    r"(?![0-9A-Za-z]|[./][0-9])"
)
ERA_HINT = re.compile(r"[明大昭平令民][治正和成國国]|(?<![A-Za-z0-9])[MTSHR][0-9]{1,2}[./][0-9]")


def _in_era(era: _Era, y: int, m: int | None, d: int | None) -> bool:
    """Is the date, at the precision written, inside the era?"""
    last = era.last or _D(9999, 12, 31)
    k = 1 if m is None else 2 if d is None else 3
    first = (era.first.year, era.first.month, era.first.day)
    return first[:k] <= (y, m, d)[:k] <= (last.year, last.month, last.day)[:k]


def _valid(y: int, m: int | None, d: int | None) -> bool:
    try:
        _dt.date(y, m or 1, d or 1)
    except ValueError:
        return False
    return True


def find_era_dates(t: str) -> list[tuple[int, int, int, int | None, int | None]]:
    """(start, end, year, month, day) for each era date in prepared text, as Gregorian years."""
    if not ERA_HINT.search(t):
        return []
    out = []
    for rx in (_KANJI, _LETTER):
        for m in rx.finditer(t):
            name = _LETTERS.get(m["era"], m["era"])
            era = _ERAS[name]
            n = 1 if m["y"] == "元" else int(m["y"])
            if n < 1:
                continue
            y = era.year(n)
            mo = int(m["m"]) if m["m"] else None
            d = int(m["d"]) if m["d"] else None
            if _valid(y, mo, d) and _in_era(era, y, mo, d):
                out.append((m.start(), m.end(), y, mo, d))
    return out


__all__ = ["ERA_HINT", "find_era_dates"]
