"""Words that scale the number before them (docs/scoring.md, 'World formats'). CJK compounds must fall
from left to right or the amount is not read. M, K, B, mn, Md only beside a currency. Not a scale: "m", "cr",
"bilhão"/"billón" (10^9 or 10^12 by country); German "Billion" (10^12) read as 10^9 is the one trade-off."""

from __future__ import annotations

import re
from decimal import Decimal

_CJK = {"十": 10, "百": 100, "千": 1000, "万": 10**4, "萬": 10**4, "億": 10**8, "亿": 10**8, "兆": 10**12,
        "십": 10, "백": 100, "천": 1000, "만": 10**4, "억": 10**8, "조": 10**12}
_CJK_UNIT = "[十百千]?[万萬億亿兆]|[십백천]?[만억조]|[千천]"
CJK_SCALE = rf"(?:{_CJK_UNIT})(?:\ ?[0-9][0-9,]*(?:{_CJK_UNIT}|[百백]))*(?:[0-9]+(?![0-9,.]))?"

_WORDS = {  # read in any case
    "thousand": 3, "thousands": 3, "million": 6, "millions": 6, "billion": 9, "billions": 9,
    "trillion": 12, "trillions": 12, "lakh": 5, "lakhs": 5, "lac": 5, "lacs": 5, "crore": 7, "crores": 7,
    "millionen": 6, "milliarde": 9, "milliarden": 9, "milliard": 9, "milliards": 9,
    "millón": 6, "millon": 6, "millones": 6, "mil millones": 9, "milhão": 6, "milhao": 6, "milhões": 6,
    "milhoes": 6, "mil milhões": 9, "mil milhoes": 9, "milione": 6, "milioni": 6, "miliardo": 9, "miliardi": 9,
    "miljoen": 6, "miljoenen": 6, "miljard": 9, "miljarden": 9, "milion": 6, "miliona": 6, "miliony": 6,
    "milionów": 6, "milionow": 6, "miliard": 9, "miliarda": 9, "miliardy": 9, "miliardów": 9, "miliardow": 9,
    "bn": 9, "mln": 6, "mld": 9, "mrd": 9,
}
_ABBREV = {"Mio": 6, "Mrd": 9, "Tsd": 3, "Mln": 6, "Mld": 9, "tys": 3}  # as written, "." optional
_ABBREV_DOT = {"Mia.": 9}
_WEAK = {"MM": 6, "M": 6, "B": 9, "K": 3, "k": 3, "mn": 6, "Mn": 6, "Md": 9, "Mds": 9}  # beside a currency only


def _alt(names: list[str]) -> str:
    # longest first; re.escape writes a space as "\\ ", which AMOUNT_RE (re.X) reads as a space
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


WORD_SCALE = (rf"\ ?(?:(?i:{_alt(list(_WORDS))})(?![^\W\d_])|(?:{_alt(list(_ABBREV))})\.?(?![^\W\d_])"
              rf"|{_alt(list(_ABBREV_DOT))}|(?:{_alt(list(_WEAK))})(?![^\W\d_]))")
# a scale starts with one of these letters (after one space at most): a cheap test first
SCALE = rf"(?=\ ?[TtMmBbLlCcKk十百千万萬億亿兆십백천만억조])(?:{CJK_SCALE}|{WORD_SCALE})"
_CJK_PART = re.compile(rf"\ ?(?P<n>[0-9][0-9,]*)?(?P<u>{_CJK_UNIT}|[百백])|(?P<tail>[0-9]+)$")


def is_weak(scale: str) -> bool:
    """Is this a scale only beside a currency (M, K, B, mn, ...)?"""
    return scale.strip() in _WEAK


def _unit(u: str) -> int:
    out = 1
    for c in u:
        out *= _CJK[c]
    return out


def _plain(v: Decimal) -> Decimal:
    """2.5 x 10^8 written out (250000000), so digit slips compare digits as written."""
    return v.quantize(Decimal(1)) if v == v.to_integral_value() else v.normalize()


def scaled(value: Decimal, scale: str) -> Decimal | None:
    """`value` times `scale`; None for a CJK compound whose units do not fall from left to right."""
    s = scale.strip()
    if s[0] in _CJK:
        total, last, pos, head = Decimal(0), None, 0, value
        for m in _CJK_PART.finditer(s):
            if m.start() != pos:
                return None
            pos = m.end()
            if m["tail"]:
                if last is None or int(m["tail"]) >= last:
                    return None
                total += int(m["tail"])
                continue
            unit = _unit(m["u"])
            if last is not None and unit >= last:
                return None
            n = head if m["n"] is None else Decimal(m["n"].replace(",", ""))
            if m["n"] is None and last is not None:
                return None
            total, last, head = total + n * unit, unit, Decimal(0)
        return _plain(total) if pos == len(s) else None
    exp = _WORDS.get(s.lower()) or _ABBREV.get(s.rstrip(".")) or _ABBREV_DOT.get(s) or _WEAK.get(s)
    return None if exp is None else _plain(value.scaleb(exp))


__all__ = ["SCALE", "is_weak", "scaled"]
