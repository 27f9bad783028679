"""Dates written numerically, in words (values/months.py), in CJK form, in a Japanese era (values/eras.py)
or in the Hijri calendar (values/hijri.py). A numeric a/b/yyyy date with a, b <= 12 reads by the field's
date order (`read_date_order`); under "ymd" it is an AmbiguousDate that no gold matches. Never today's."""

from __future__ import annotations

import datetime as _dt
import re
from functools import lru_cache
from typing import Any, NamedTuple

from evalrun.values.eras import ERA_HINT, find_era_dates
from evalrun.values.hijri import LATIN_HINTS, find_hijri_dates, has_hint
from evalrun.values.locales import locale_date_order, locale_problem
from evalrun.values.months import MONTH_NAMES, MONTHS as _MONTHS, NEEDS_YEAR
from evalrun.values.text import CACHE_MAX_LEN, HAS_DIGIT, prep


class DateParts(NamedTuple):
    y: int | None
    m: int | None
    d: int | None


class AmbiguousDate(NamedTuple):
    """A numeric a/b/yyyy date either of whose parts could be the month, under the "ymd" order."""

    y: int
    a: int
    b: int

    @property
    def readings(self) -> tuple[DateParts, DateParts]:
        return DateParts(self.y, self.b, self.a), DateParts(self.y, self.a, self.b)


DATE_ORDERS = ("dmy", "mdy", "ymd")


def read_date_order(opts: dict[str, Any]) -> str:
    """A field's date order: `date_order`, else `dayfirst`, else its `locale`'s, else dmy; ValueError otherwise."""
    order = opts.get("date_order")
    if order is None:
        dayfirst = opts.get("dayfirst")
        if dayfirst is None and opts.get("locale") is not None:
            if (problem := locale_problem(opts["locale"])) is not None:
                raise ValueError(problem)
            return locale_date_order(opts["locale"]) or "dmy"
        return "dmy" if dayfirst is None or dayfirst is True or dayfirst == 1 else _dayfirst_order(dayfirst)
    if not isinstance(order, str) or order.strip().lower() not in DATE_ORDERS:
        raise ValueError(f"date_order must be one of {', '.join(DATE_ORDERS)}; got {order!r}")
    return order.strip().lower()


def _dayfirst_order(dayfirst: Any) -> str:
    if dayfirst is False or dayfirst == 0:
        return "mdy"
    raise ValueError(f"dayfirst must be true or false; got {dayfirst!r}")


def _order(order: str | bool) -> str:
    """The positional argument of the parsers: an order, or the older dayfirst flag."""
    if isinstance(order, bool):
        return "dmy" if order else "mdy"
    return order


# written dates are found from their month word outwards: far cheaper than a 70-way month alternation per pattern
_MONTH_WORD = re.compile(r"(?<![^\W\d_])[^\W\d_]{3,12}(?![^\W\d_])")
# "14th of March", "12 de abril", "1º de março" (NFKC makes º an "o"), "7° settembre"
_BEFORE_D = re.compile(r"(?<![0-9])(?P<d>[0-9]{1,2})(?:st|nd|rd|th|er|o|°|\.)?(?:\s+(?:of|de|del))?[\s\-/.,]*\Z", re.I)
_AFTER_D_Y = re.compile(r"\.?\s*(?P<d>[0-9]{1,2})(?:st|nd|rd|th)?(?:\s*,)?[\s\-/.,]*(?P<y>[0-9]{4})(?![0-9])", re.I)
# "abril de 2023", "marzo del 2024"
_AFTER_Y = re.compile(r"\.?[\s\-/.,]*(?:(?:de|del)\s+)?(?P<y>[0-9]{4})(?![0-9])", re.I)
_BEFORE_Y = re.compile(r"(?<![0-9])(?P<y>[0-9]{4})[\s\-/.,]*\Z")
_AFTER_D = re.compile(r"\.?\s*(?P<d>[0-9]{1,2})(?:st|nd|rd|th)?(?![0-9])", re.I)


def _compile(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((name, re.compile(rx, re.I)) for name, rx in pairs)


_CJK_PATTERNS = _compile((
    ("cjk", r"(?<![0-9])(?P<y>[0-9]{4})\s*[年년]\s*(?P<m>[0-9]{1,2})\s*[月월](?:\s*(?P<d>[0-9]{1,2})\s*[日号號일])?"),
    ("cjk_md", r"(?<![0-9])(?P<m>[0-9]{1,2})\s*[月월]\s*(?P<d>[0-9]{1,2})\s*[日号號일]"),
))
_NUMERIC_PATTERNS = _compile((
    ("ymd", r"(?<![0-9A-Za-z.,])(?P<y>[0-9]{4})(?P<sep>[-/.])(?P<m>[0-9]{1,2})(?P=sep)(?P<d>[0-9]{1,2})(?![0-9]|[.,][0-9])"),
    ("dmy", r"(?<![0-9A-Za-z.,/\-])(?P<a>[0-9]{1,2})(?P<sep>[-/.])(?P<b>[0-9]{1,2})(?P=sep)(?P<y>[0-9]{4}|[0-9]{2})(?![0-9]|[.,/\-][0-9])"),
    ("ym", r"(?<![0-9A-Za-z.,/\-])(?P<y>[0-9]{4})-(?P<m>[0-9]{2})(?![0-9]|[-/.][0-9])"),
))
_NUM_HINT = re.compile(r"[0-9][-/.][0-9]{1,2}[-/.][0-9]|[0-9]{4}-[0-9]{2}")


def _valid(y: int | None, m: int | None, d: int | None) -> bool:
    if m is not None and not 1 <= m <= 12:
        return False
    if y is not None and not 1 <= y <= 9999:
        return False
    if d is None:
        return True
    try:
        _dt.date(y if y is not None else 2000, m or 1, d)  # 2000: leap, so --02-29 is fine
        return True
    except ValueError:
        return False


def _two_digit_year(y: str) -> int:
    """Explicit pivot for a written 2-digit year (not a fill-in): 00-69 -> 20xx."""
    v = int(y)
    return v if len(y) == 4 else (2000 + v if v < 70 else 1900 + v)


def _match_parts(name: str, m: re.Match[str], order: str) -> DateParts | AmbiguousDate | None:
    g = m.groupdict()
    y = _two_digit_year(g["y"]) if g.get("y") else None
    d: int | None
    if name == "dmy":
        a, b = int(g["a"]), int(g["b"])
        if order == "ymd" and a <= 12 and b <= 12 and a != b and y is not None:
            amb = AmbiguousDate(y, a, b)
            return amb if all(_valid(*r) for r in amb.readings) else None
        if a > 12 or (order != "mdy" and b <= 12):
            d, mo = a, b
        else:
            mo, d = a, b
    else:
        mo = int(g["m"])
        d = int(g["d"]) if g.get("d") else None
    return DateParts(y, mo, d) if _valid(y, mo, d) else None


def _written_date(t: str, w: re.Match[str], mo: int) -> list[tuple[int, int, DateParts]]:
    """The longest date around one month word, preferring 14 March 2024, March 14, 2024, 2024 March 14,
    March 2024, 2024 March, 14 March, March 14."""
    ws, we = w.span()
    lo = max(0, ws - 24)
    before = _BEFORE_D.search(t, lo, ws)
    before_y = _BEFORE_Y.search(t, lo, ws)
    after_y = _AFTER_Y.match(t, we)
    after_d = _AFTER_D.match(t, we)
    cands: list[tuple[int, int, int | None, int | None]] = []  # start, end, y, d
    if before and after_y:
        cands.append((before.start(), after_y.end(), int(after_y["y"]), int(before["d"])))
    if m := _AFTER_D_Y.match(t, we):
        cands.append((ws, m.end(), int(m["y"]), int(m["d"])))
    if before_y and after_d:
        cands.append((before_y.start(), after_d.end(), int(before_y["y"]), int(after_d["d"])))
    low = w.group().lower()  # "EUR 12 may apply", "5 ago", "3 years ago, 2021" are not dates
    full_only = low in NEEDS_YEAR and low != "may"  # a word elsewhere: only in a full date
    if after_y and not full_only:
        cands.append((ws, after_y.end(), int(after_y["y"]), None))
    if before_y and not full_only:
        cands.append((before_y.start(), we, int(before_y["y"]), None))
    yearless_ok = w.group() != "may" and not full_only
    if before and yearless_ok:
        cands.append((before.start(), we, None, int(before["d"])))
    if after_d and yearless_ok:
        cands.append((ws, after_d.end(), None, int(after_d["d"])))
    if not cands:
        return []
    start, end, y, d = cands[0]  # an invalid "31 February 2024" is no date, not "2024-02"
    return [(start, end, DateParts(y, mo, d))] if _valid(y, mo, d) else []


def find_dates(t: str, order: str | bool = "dmy") -> list[tuple[int, int, DateParts | AmbiguousDate]]:
    """Non-overlapping dates in prepared text, leftmost-longest first (True/False: the older dayfirst flag)."""
    order = _order(order)
    if not HAS_DIGIT.search(t) and "元年" not in t:  # 令和元年: the first year of an era
        return []
    patterns: list[tuple[str, re.Pattern[str]]] = []
    if "月" in t or "월" in t:
        patterns += _CJK_PATTERNS
    numeric = _NUM_HINT.search(t) is not None
    if numeric:
        patterns += _NUMERIC_PATTERNS
    found: list[tuple[int, int, DateParts | AmbiguousDate]] = []
    for name, rx in patterns:
        for m in rx.finditer(t):
            parts = _match_parts(name, m, order)
            if parts is not None:
                found.append((m.start(), m.end(), parts))
    hijri = not t.isascii() and has_hint(t) or "AH" in t or "A.H" in t
    for w in _MONTH_WORD.finditer(t):
        low = w.group().lower()
        mo = _MONTHS.get(low)
        if mo is not None:
            found.extend(_written_date(t, w, mo))
        elif low in LATIN_HINTS:
            hijri = True
    if hijri:
        found.extend((s, e, DateParts(*g)) for s, e, g in find_hijri_dates(t))
    if ("年" in t or numeric) and ERA_HINT.search(t):  # era years, or R5.12.1
        found.extend((s, e, DateParts(y, mo, d)) for s, e, y, mo, d in find_era_dates(t))
    if len(found) < 2:
        return found
    found.sort(key=lambda x: (x[0], x[0] - x[1]))
    out: list[tuple[int, int, DateParts | AmbiguousDate]] = []
    end = -1
    for s, e, p in found:
        if s >= end:
            out.append((s, e, p))
            end = e
    return out


def mask_dates(t: str) -> str:
    spans = find_dates(t)
    if not spans:
        return t
    chunks, pos = [], 0
    for s, e, _ in spans:
        chunks += [t[pos:s], " " * (e - s)]
        pos = e
    chunks.append(t[pos:])
    return "".join(chunks)


_WHOLE_COMPACT = re.compile(r"\s*([0-9]{4})([0-9]{2})([0-9]{2})\s*\Z")
_WHOLE_YEAR = re.compile(r"\s*([0-9]{4})\s*\Z")


def _extract_dates(text: str, order: str) -> tuple[DateParts | AmbiguousDate, ...]:
    t = prep(text)
    found = [p for _, _, p in find_dates(t, order)]
    if not found:
        # Whole-value-only forms: too risky to pick out of prose.
        if m := _WHOLE_COMPACT.match(t):
            y, mo, d = int(m[1]), int(m[2]), int(m[3])
            if _valid(y, mo, d):
                found = [DateParts(y, mo, d)]
        elif m := _WHOLE_YEAR.match(t):
            found = [DateParts(int(m[1]), None, None)]
    return tuple(found[:200])


_extract_dates_cached = lru_cache(maxsize=65536)(_extract_dates)


def extract_dates(text: str, order: str | bool = "dmy") -> tuple[DateParts | AmbiguousDate, ...]:
    """All dates as (y, m, d), None for parts not written; an either-way a/b/yyyy under "ymd" is an AmbiguousDate."""
    order = _order(order)
    if len(text) > CACHE_MAX_LEN:
        return _extract_dates(text, order)
    return _extract_dates_cached(text, order)


def fmt_date(p: DateParts | AmbiguousDate) -> str:
    if isinstance(p, AmbiguousDate):
        return " or ".join(fmt_date(r) for r in p.readings)
    if p.y is None:
        return f"--{p.m:02d}-{p.d:02d}" if p.d is not None else f"--{p.m:02d}"
    if p.m is None:
        return f"{p.y:04d}"
    return f"{p.y:04d}-{p.m:02d}" + (f"-{p.d:02d}" if p.d is not None else "")




def distinct_dates(cands: tuple[DateParts | AmbiguousDate, ...]) -> list[DateParts | AmbiguousDate]:
    """Unique dates; a less precise mention consistent with a more precise one ("March 2024, on 14 March 2024"),
    or an ambiguous date one of whose readings is also written, is the same answer."""
    uniq = list(dict.fromkeys(cands))
    plain = [c for c in uniq if isinstance(c, DateParts)]
    return [
        c for c in uniq
        if (not any(r in plain for r in c.readings) if isinstance(c, AmbiguousDate) else
            not any(o != c and all(cv is None or cv == ov for cv, ov in zip(c, o)) for o in plain))
    ]
