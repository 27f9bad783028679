"""Amounts and plain numbers: separators, signs, currencies, one span each."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import NamedTuple

from evalrun.values.dates import mask_dates
from evalrun.values.text import CACHE_MAX_LEN, prep

ISO_CODES = (
    "EUR USD GBP CHF JPY CNY RMB INR CAD AUD NZD HKD SGD SEK NOK DKK PLN CZK HUF RUB "
    "TRY BRL MXN ZAR KRW TWD THB IDR MYR PHP VND ILS AED SAR QAR KWD EGP NGN KES ARS "
    "CLP COP PEN UAH RON BGN ISK"
).split()
_SYMBOLS = {
    "$": "USD", "US$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR", "₩": "KRW",
    "₽": "RUB", "₺": "TRY", "₪": "ILS", "₫": "VND", "฿": "THB", "₴": "UAH", "₦": "NGN",
    "₱": "PHP", "C$": "CAD", "CA$": "CAD", "A$": "AUD", "AU$": "AUD", "HK$": "HKD",
    "NZ$": "NZD", "S$": "SGD", "R$": "BRL", "NT$": "TWD", "MX$": "MXN", "円": "JPY",
    "元": "CNY", "zł": "PLN", "Kč": "CZK", "Rs": "INR", "Rs.": "INR", "RMB": "CNY",
    "euro": "EUR", "euros": "EUR", "dollar": "USD", "dollars": "USD", "yen": "JPY",
    "pound": "GBP", "pounds": "GBP",
}

# Word characters for digit/id boundaries: ASCII, Latin, Greek, Cyrillic. CJK is
# left out on purpose: "合計14,851.20円" glues numbers to ideographs.
_W = r"0-9A-Za-z_\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff"
_SPACE_SEP = " '\u2019\u00a0\u202f\u2009"
_NUM = rf"""
(?:
    [0-9]{{1,3}}(?:,[0-9]{{3}})+(?:\.[0-9]+)?            # 1,234,567.89
  | [0-9]{{1,3}}(?:\.[0-9]{{3}})+(?:,[0-9]+)?            # 1.234.567,89 (and 1.234)
  | [0-9]{{1,3}}(?:[{_SPACE_SEP}][0-9]{{3}})+(?:[.,][0-9]+)?   # 1 234,50  1'234.50
  | [0-9]{{1,2}}(?:,[0-9]{{2}})+,[0-9]{{3}}(?:\.[0-9]+)?  # 12,34,567.00 (Indian)
  | [0-9]{{1,3}}(?:,[0-9]{{1,3}})+\.[0-9]{{1,2}}           # 14,85.20: a damaged grouping, still one amount
  | [0-9]{{1,3}}(?:\.[0-9]{{1,3}})+,[0-9]{{1,2}}           # 14.85,20
  | [0-9]+(?:[.,][0-9]+)?                                # 1234.5  12,5
  | (?<![0-9])\.[0-9]+                                   # .5
)"""
_SYM = r"(?:US|CA|AU|HK|NZ|NT|MX|C|A|S|R)\$|[$€£¥₹₩₽₺₪₫฿₴₦₱]"
_CODES = "|".join(ISO_CODES)
_PRE = rf"{_SYM}|(?<![A-Za-z])(?:{_CODES}|Rs\.?)(?![A-Za-z])"
_POST = rf"{_SYM}|(?:{_CODES})(?![A-Za-z])|円|元|zł|Kč|(?i:euros?|dollars?|yen|pounds?)(?![A-Za-z])"
_MINUS = "-\u2212\u2013"
AMOUNT_RE = re.compile(
    rf"""
    (?<![{_W}.,])(?<![{_W}][-/._\u2013])(?<![0-9]:)     # not glued to a word or id
    (?P<open>\(\ ?)?
    (?P<s1>[{_MINUS}+])?
    (?:(?P<c1>{_PRE})\ ?)?
    (?P<open2>\(\ ?)?
    (?P<s2>[{_MINUS}+])?
    (?P<num>{_NUM})
    (?P<pct>\ ?%)?
    (?P<close1>\ ?\))?
    (?:\ ?(?P<c2>{_POST}))?
    (?P<close2>\ ?\))?
    (?P<tm>-)?
    (?![{_W}])(?![-/:\u2013][{_W}])(?![.,][0-9])        # digit boundary on the right
    """,
    re.X,
)


class AmountCand(NamedTuple):
    value: Decimal
    currency: str | None


_SPACE_SEP_RE = re.compile(f"[{_SPACE_SEP}]")


@lru_cache(maxsize=16384)
def interpret_number(num: str, decimal: str | None = None) -> Decimal | None:
    """Digits with separators -> Decimal, deciding which separator is decimal.

    Spaces and apostrophes are always thousands; with both '.' and ',' the last
    one is decimal; repeated separators are thousands. A single separator
    followed by exactly three digits ("1,234", "1.234") is the ambiguous case:
    `decimal` names the decimal separator ("." by default: "1,234" is 1234,
    "1.234" is 1.234), or "auto" reads both as thousands (amounts seldom have
    three decimals). A leading "0" group is never thousands ("0,125").
    """
    s = num
    if _SPACE_SEP_RE.search(s):
        s = _SPACE_SEP_RE.sub("", s).replace(",", ".")
    elif "." in s and "," in s:
        if s.rfind(".") > s.rfind(","):
            s = s.replace(",", "")
        else:
            s = s.replace(".", "").replace(",", ".")
    else:
        sep = "," if "," in s else "." if "." in s else ""
        if sep:
            head, _, frac = s.partition(sep)
            thousands = decimal == "auto" or sep != (decimal or ".")
            if s.count(sep) > 1 or (thousands and len(frac) == 3 and head not in ("", "0")):
                s = s.replace(sep, "")
            else:
                s = s.replace(",", ".")
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def currency_code(tok: str | None) -> str | None:
    if not tok:
        return None
    if tok in _SYMBOLS:
        return _SYMBOLS[tok]
    low = tok.lower()
    if low in _SYMBOLS:
        return _SYMBOLS[low]
    return tok.upper() if tok.upper() in ISO_CODES else None


def _extract_amounts(text: str, decimal: str | None) -> tuple[AmountCand, ...]:
    t = mask_dates(prep(text))
    out: list[AmountCand] = []
    for m in AMOUNT_RE.finditer(t):
        val = interpret_number(m["num"], decimal)
        if val is None:
            continue
        neg = bool((m["s1"] and m["s1"] != "+") or (m["s2"] and m["s2"] != "+") or m["tm"])
        if (m["open"] or m["open2"]) and (m["close1"] or m["close2"]) and not neg:
            # Accounting negative when the parenthesised amount ends the answer
            # and no other number came before it: "(1,234.50)", "Net: (1,234.50)".
            # Otherwise it is an aside: "The total (EUR 5) is due", "EUR 5 (5 EUR)".
            neg = not out and not t[m.end():].strip(" \t\r\n.;,!*")
        if neg:
            val = -val
        if val == 0:
            val = abs(val)
        out.append(AmountCand(val, currency_code(m["c1"] or m["c2"])))
        if len(out) >= 200:
            break
    return tuple(out)


_extract_amounts_cached = lru_cache(maxsize=65536)(_extract_amounts)


def extract_amounts(text: str, decimal: str | None = None) -> tuple[AmountCand, ...]:
    """All amounts/numbers in `text`, in order, each one currency-aware span.

    Dates are masked first so "14 March 2024" never yields 14 and 2024; digits
    glued to letters or ids ("INV-2024-001", "A123", "5-10") are not numbers.
    """
    if len(text) > CACHE_MAX_LEN:
        return _extract_amounts(text, decimal)
    return _extract_amounts_cached(text, decimal)


def fmt_amount(value: Decimal, currency: str | None = None) -> str:
    s = format(value, "f")
    return f"{s} {currency}" if currency else s



def distinct_amounts(cands: tuple[AmountCand, ...], use_currency: bool) -> list[AmountCand]:
    """One entry per value; a value named with two currencies counts twice."""
    if len(cands) == 1:
        c = cands[0]
        return [c if use_currency or c.currency is None else AmountCand(c.value, None)]
    currencies: dict[Decimal, set[str]] = {}
    for c in cands:
        seen = currencies.setdefault(c.value, set())
        if use_currency and c.currency:
            seen.add(c.currency)
    out: list[AmountCand] = []
    for value, curs in currencies.items():
        if len(curs) <= 1:
            out.append(AmountCand(value, next(iter(curs), None)))
        else:
            out.extend(AmountCand(value, c) for c in sorted(curs))
    return out
