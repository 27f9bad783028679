"""Hijri dates, converted to Gregorian with `hijridate` (Umm al-Qura): "15 Ramadan 1445", "1445/09/15 AH"
(a numeric one needs the AH/هـ mark). Whole dates only; outside the table or nonexistent is none, never a guess."""

from __future__ import annotations

import re
from functools import lru_cache

_MARK = r"(?:\s*(?:A\.?H\.?(?![A-Za-z])|هـ|ه(?![\w])))"
# canonical spellings; "'" may be any apostrophe or none, " " and "-" any run of spaces or hyphens
_LATIN = {
    1: ("muharram", "moharram", "muharam"), 2: ("safar",),
    3: ("rabi' al-awwal", "rabi' al-awal", "rabi' ul-awwal", "rabi' i"),
    4: ("rabi' al-thani", "rabi' al-akhir", "rabi' ul-akhir", "rabi' ath-thani", "rabi' ii"),
    5: ("jumada al-awwal", "jumada al-ula", "jumada al-oula", "jumadal-awwal", "jumada i"),
    6: ("jumada al-thani", "jumada al-akhirah", "jumada al-akhira", "jumada ath-thani", "jumadal-akhir", "jumada ii"),
    7: ("rajab",), 8: ("sha'ban", "sha'aban"), 9: ("ramadan", "ramadhan", "ramazan"), 10: ("shawwal", "shawal"),
    11: ("dhu al-qi'dah", "dhu al-qa'dah", "dhu al-qi'da", "dhu'l-qi'dah", "dhu'l-qa'dah", "dhul-qi'dah",
         "dhul-qa'dah", "zul-qa'dah"),
    12: ("dhu al-hijjah", "dhu al-hijja", "dhu'l-hijjah", "dhul-hijjah", "zul-hijjah"),
}
_ARABIC = {
    1: ("محرم",), 2: ("صفر",), 3: ("ربيع الأول", "ربيع الاول", "ربيع أول"),
    4: ("ربيع الثاني", "ربيع الآخر", "ربيع الاخر", "ربيع ثاني"),
    5: ("جمادى الأولى", "جمادى الاولى", "جمادى الأول", "جمادى الاول"),
    6: ("جمادى الآخرة", "جمادى الاخرة", "جمادى الثانية", "جمادى الآخر", "جمادى الاخر"),
    7: ("رجب",), 8: ("شعبان",), 9: ("رمضان",), 10: ("شوال",),
    11: ("ذو القعدة", "ذي القعدة"), 12: ("ذو الحجة", "ذي الحجة"),
}


def _spelling(name: str) -> str:
    out = []
    for c in name:
        out.append("['’ʿʻ‘`]?" if c == "'" else r"[\s\-]*" if c in " -" else re.escape(c))
    return "".join(out)


_SQUASH = re.compile(r"['’ʿʻ‘`\s\-]+")


def _key(name: str) -> str:
    return _SQUASH.sub("", name.lower())


_BY_KEY = {_key(n): m for table in (_LATIN, _ARABIC) for m, names in table.items() for n in names}
_MONTH = "(?P<mon>" + "|".join(_spelling(n) for n in sorted(
    [n for table in (_LATIN, _ARABIC) for names in table.values() for n in names], key=len, reverse=True)) + ")"
_WORDY = re.compile(  # 15 Ramadan 1445 | Ramadan 15, 1445
    rf"(?<![0-9])(?P<d>[0-9]{{1,2}})(?:st|nd|rd|th)?\s*(?:of\s+)?{_MONTH}(?![^\W\d_])[\s,]*"
    rf"(?P<y>[0-9]{{4}})(?![0-9]){_MARK}?"
    rf"|(?<![^\W\d_]){_MONTH.replace('?P<mon>', '?P<mon2>')}\s*(?P<d2>[0-9]{{1,2}})(?:st|nd|rd|th)?\s*,?\s*"
    rf"(?P<y2>[0-9]{{4}})(?![0-9]){_MARK}?",
    re.I)
_NUMERIC = re.compile(
    rf"(?<![0-9./\-])(?:(?P<y>1[3-5][0-9]{{2}})(?P<s>[/\-.])(?P<m>[0-9]{{1,2}})(?P=s)(?P<d>[0-9]{{1,2}})"
    rf"|(?P<d2>[0-9]{{1,2}})(?P<s2>[/\-.])(?P<m2>[0-9]{{1,2}})(?P=s2)(?P<y2>1[3-5][0-9]{{2}}))(?![0-9]){_MARK}",
    re.I)
# the words one of whose presence makes a text worth the full Hijri scan
LATIN_HINTS = frozenset("muharram moharram muharam safar rabi jumada jumadal rajab sha shaban shaaban ramadan "
                        "ramadhan ramazan shawwal shawal dhu dhul zul".split())
_ARABIC_LETTER = re.compile(r"[\u0600-\u06ff]")


@lru_cache(maxsize=4096)
def to_gregorian(y: int, m: int, d: int) -> tuple[int, int, int] | None:
    """The Gregorian (y, m, d) of a Hijri date, or None outside the table or for a day that does not exist."""
    from hijridate import Hijri  # imported on first use: most runs meet no Hijri date

    try:
        g = Hijri(y, m, d, validate=True).to_gregorian()
    except (ValueError, OverflowError):
        return None
    return g.year, g.month, g.day


def has_hint(t: str) -> bool:
    """Arabic letters or a numeric date marked AH: worth the Hijri scan (Latin names: the date reader's loop)."""
    return bool(_ARABIC_LETTER.search(t)) or "AH" in t or "A.H" in t


def find_hijri_dates(t: str) -> list[tuple[int, int, tuple[int, int, int]]]:
    """(start, end, Gregorian (y, m, d)) for each whole Hijri date in prepared text."""
    out = []
    for m in _WORDY.finditer(t):
        month = _BY_KEY.get(_key(m["mon"] or m["mon2"]))
        if month is None:
            continue
        d, y = (m["d"], m["y"]) if m["d"] else (m["d2"], m["y2"])
        if (g := to_gregorian(int(y), month, int(d))) is not None:
            out.append((m.start(), m.end(), g))
    for m in _NUMERIC.finditer(t):
        y, mo, d = (m["y"], m["m"], m["d"]) if m["y"] else (m["y2"], m["m2"], m["d2"])
        if (g := to_gregorian(int(y), int(mo), int(d))) is not None:
            out.append((m.start(), m.end(), g))
    return out


__all__ = ["LATIN_HINTS", "find_hijri_dates", "has_hint", "to_gregorian"]
