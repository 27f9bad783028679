"""Amounts and plain numbers: separators, signs, currencies, one span each."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import NamedTuple

from evalrun.values.currencies import ISO_CODES, THREE_DECIMAL, currency_code, more_specific, same_currency
from evalrun.values.dates import mask_dates
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.scales import SCALE, is_weak, scaled
from evalrun.values.text import CACHE_MAX_LEN, prep

# word characters for digit/id boundaries; not CJK, on purpose: "合計14,851.20円" glues numbers to ideographs
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
  | [0-9]{{1,3}}(?:\.[0-9]{{3}})+\.[0-9]{{1,2}}             # 1.412.50: one separator throughout, decimal last
  | [0-9]{{1,3}}(?:,[0-9]{{3}})+,[0-9]{{1,2}}               # 1,412,50
  | [0-9]+(?:[.,][0-9]+)?                                # 1234.5  12,5
  | (?<![0-9])\.[0-9]+                                   # .5
)"""
_SYM = r"(?:US|CA|AU|HK|NZ|NT|MX|C|A|S|R)\$|[$€£¥₹₩₽₺₪₫฿₴₦₱]"
_CODES = "|".join(ISO_CODES)
# "R" (rand) only right before an amount with cents or thousands groups ("R 12.50"); "R12" stays an id
_RAND = r"R(?=\ ?(?:[0-9]{1,3}(?:[ ,.][0-9]{3})+(?:[.,][0-9]{2})?|[0-9]+[.,][0-9]{2})(?![0-9]))"
_PRE = rf"{_SYM}|(?<![A-Za-z])(?:{_CODES}|Rs\.?|[Kk]r\.?|S?Fr\.|sFr\.)(?![A-Za-z])|(?<![A-Za-z]){_RAND}"
_POST = (rf"{_SYM}|(?:{_CODES})(?![A-Za-z])|円|元|원|zł|Kč|(?:[Kk]r\.?|S?Fr\.)(?![A-Za-z])"
         r"|(?i:euros?|dollars?|yen|won|pounds?|kron(?:a|e|or|er))(?![A-Za-z])")
_MINUS = "-\u2212\u2013"
# units of two or more letters that may be glued to their number: "3'482kWh", "12kg", "500ml"
_GLUED_UNIT = r"(?:kWh|MWh|GWh|kW|MW|kg|mg|km|cm|mm|ml|m²|m³|lbs|lb|oz|ft|yd)(?![A-Za-z0-9])"
AMOUNT_RE = re.compile(
    rf"""
    (?<![{_W}.,])(?<![{_W}][-/._\u2013])(?<![0-9]:)     # not glued to a word or id
    (?P<open>\(\ ?)?
    (?P<s1>[{_MINUS}+])?
    (?:(?P<c1>{_PRE})\ ?)?
    (?P<open2>\(\ ?)?
    (?P<s2>[{_MINUS}+])?
    (?P<num>{_NUM})
    (?P<scale>{SCALE})?                                 # 2.5億, 1.5 million, 12 lakh
    (?P<pct>\ ?%)?
    (?P<close1>\ ?\))?
    (?:\ ?(?P<c2>{_POST}))?
    (?P<close2>\ ?\))?
    (?P<tm>-)?
    (?:(?![{_W}])|(?={_GLUED_UNIT}))                    # digit boundary on the right, or 3'482kWh
    (?![-/:\u2013][{_W}])(?![.,][0-9])(?!['\u2019][0-9]{{3}})  # never part of a longer 3'482
    """,
    re.X,
)
# a unit after a number, and the words opening a restatement: "EUR 1,200.00 (approx. USD 1,296.00)" is one value
_UNIT = re.compile(
    r"\ ?(?P<unit>(?i:kg|g|mg|t|tonnes?|lbs?|oz|km|m|cm|mm|mi|miles?|ft|feet|in|inch(?:es)?|yd"
    r"|l|ml|gal|gallons?|litres?|liters?|metres?|meters?|kilograms?|grams?|sq\.?\ ?(?:ft|m)|m²|m2|m³|m3"
    r"|ft²|ha|acres?|°C|°F|kWh|MWh|kW|hp|mph|km/h|kph|hours?|hrs?|days?))(?![A-Za-z0-9])"
)
_RESTATE_GAP = re.compile(r"\s*\(\s*(?:(?i:approx\.?|approximately|about|ca\.|circa|i\.e\.|or|=|≈|~)\s*)?\Z")


class AmountCand(NamedTuple):
    value: Decimal
    currency: str | None


_SPACE_SEP_RE = re.compile(f"[{_SPACE_SEP}]")
_DECIMAL_LAST = re.compile(r"[0-9]{1,3}(?:([.,])[0-9]{3})+\1[0-9]{1,2}")


@lru_cache(maxsize=16384)
def interpret_number(num: str, decimal: str | None = None, three_decimals: bool = False) -> Decimal | None:
    """Digits with separators -> Decimal. Spaces, apostrophes and repeated separators are thousands (unless
    "1.412.50": groups, then decimals); with '.' and ',' the last is decimal. One separator before exactly
    three digits is ambiguous: `decimal` names it ("auto": thousands, amounts seldom have three decimals),
    but it is decimal after 4+ integer digits, in a three-decimal currency and after a leading "0"."""
    s = num
    if _SPACE_SEP_RE.search(s):
        s = _SPACE_SEP_RE.sub("", s).replace(",", ".")
    elif "." in s and "," in s:
        s = s.replace(",", "") if s.rfind(".") > s.rfind(",") else s.replace(".", "").replace(",", ".")
    else:
        sep = "," if "," in s else "." if "." in s else ""
        if sep:
            head, _, frac = s.partition(sep)
            thousands = (decimal == "auto" or sep != (decimal or ".")) and not three_decimals
            if _DECIMAL_LAST.fullmatch(s):  # "1.412.50": groups of three, then one or two decimals
                s = s[: s.rfind(sep)].replace(sep, "") + "." + s[s.rfind(sep) + 1:]
            elif s.count(sep) > 1 or (thousands and len(frac) == 3 and head not in ("", "0") and len(head) <= 3):
                s = s.replace(sep, "")
            else:
                s = s.replace(",", ".")
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


class _Span(NamedTuple):
    end: int  # after the amount and any unit word
    currency: str | None
    unit: str | None
    closed: bool  # a ")" follows


def _span(t: str, m: re.Match[str], cur: str | None) -> _Span:
    end, unit = m.end(), None
    if cur is None and (u := _UNIT.match(t, end)):
        unit, end = u["unit"].casefold(), u.end()
    closed = bool(m["close1"] or m["close2"]) or t[end:end + 2].lstrip(" ").startswith(")")
    return _Span(end, cur, unit, closed)


def _restates(t: str, prev: tuple[re.Match[str], str | None], m: re.Match[str], cur: str | None) -> bool:
    """Is `m` a parenthesised restatement in another currency or unit ("412.6 kg (909.6 lb)")?"""
    a, b = _span(t, *prev), _span(t, m, cur)
    gap = t[a.end:m.start()]
    if not b.closed or not (_RESTATE_GAP.match(gap) or (m["open"] and not gap.strip())):
        return False
    if a.currency and b.currency:
        return not same_currency(a.currency, b.currency)
    da, db = a.currency or a.unit, b.currency or b.unit
    return bool(da and db and da != db)


# a span of time after a number: "30 days", "12 Monate", "36日", "3 ヶ月" is no sum of money
_DURATION = re.compile(
    r"\ ?(?:(?i:days?|weeks?|months?|years?|hours?|working\ days?|business\ days?|tage?n?|wochen?|monate?n?"
    r"|jahre?n?|jours?|semaines?|mois|ans|d[ií]as?|semanas?|meses|mes|a[nñ]os?|giorni|settimane|mesi|anni"
    r"|dagen|weken|maanden|jaren|dni|miesi[eę]cy)(?![A-Za-z\u00c0-\u024f])|日間?|か月|ヶ月|カ月|箇月|週間?|年間)"
)


_PERCENT_WORD = re.compile(r"\ ?(?i:percent|per\ cent|pct|prozent|pour\ cent|por\ ciento|per\ cento)\ ?\)")


def not_money(t: str, m: re.Match[str]) -> bool:
    """Is match `m` no sum of money: a span of time ("30 days") or a rate in parentheses beside an amount
    ("Tax: 512.40 (8%)")? A currency beside it makes it money; "30% of the loan" stays a share (field_clauses)."""
    if m["c1"] or m["c2"]:
        return False
    opened = bool(m["open"] or m["open2"])
    rate = opened and (bool(m["pct"] and (m["close1"] or m["close2"])) or _PERCENT_WORD.match(t, m.end()) is not None)
    return rate or (not m["pct"] and _DURATION.match(t, m.end()) is not None)


def _extract_amounts(text: str, decimal: str | None, money: bool = False) -> tuple[AmountCand, ...]:
    t = mask_list_markers(mask_dates(prep(text)))
    out: list[AmountCand] = []
    prev: tuple[re.Match[str], str | None] | None = None
    for m in AMOUNT_RE.finditer(t):
        if money and not_money(t, m):
            continue  # "30 days", "(8%)": no money
        cur = currency_code(m["c1"] or m["c2"])
        val = interpret_number(m["num"], decimal, cur in THREE_DECIMAL)
        if val is None:
            continue
        if (scale := m["scale"]) is not None:
            if is_weak(scale) and cur is None:  # "5 m", "5M": no currency, no scale
                if not scale.startswith(" "):
                    continue  # glued: no amount at all, as before scales were read
            elif (val := scaled(val, scale)) is None:
                continue
        neg = bool((m["s1"] and m["s1"] != "+") or (m["s2"] and m["s2"] != "+") or m["tm"])
        if (m["open"] or m["open2"]) and (m["close1"] or m["close2"]) and not neg:
            # accounting negative when it ends the answer after no other number ("Net: (1,234.50)");
            # otherwise an aside: "The total (EUR 5) is due", "EUR 5 (5 EUR)"
            neg = not out and not t[m.end():].strip(" \t\r\n.;,!*")
        if neg:
            val = -val
        if val == 0:
            val = abs(val)
        restated = prev is not None and (bool(m["open"]) or "(" in t[prev[0].end():m.start()]) and _restates(t, prev, m, cur)
        prev = (m, cur)
        if restated:  # one value in two units or currencies: the first is the answer
            continue
        out.append(AmountCand(val, cur))
        if len(out) >= 200:
            break
    return tuple(out)


_extract_amounts_cached = lru_cache(maxsize=65536)(_extract_amounts)


def extract_amounts(text: str, decimal: str | None = None, money: bool = False) -> tuple[AmountCand, ...]:
    """All amounts/numbers in `text`, in order. Dates and list markers are masked first, digits glued to ids
    are none, a restatement in parentheses is one value; with `money`, spans of time and rates are none."""
    if len(text) > CACHE_MAX_LEN:
        return _extract_amounts(text, decimal, money)
    return _extract_amounts_cached(text, decimal, money)


def fmt_amount(value: Decimal, currency: str | None = None) -> str:
    s = format(value, "f")
    return f"{s} {currency}" if currency else s


def distinct_amounts(cands: tuple[AmountCand, ...], use_currency: bool) -> list[AmountCand]:
    """One entry per value; a shared symbol beside one of its currencies ("$100 (USD 100)") is one."""
    if len(cands) == 1:
        c = cands[0]
        return [c if use_currency or c.currency is None else AmountCand(c.value, None)]
    currencies: dict[Decimal, list[str]] = {}
    for c in cands:
        seen = currencies.setdefault(c.value, [])
        if use_currency and c.currency:
            for i, s in enumerate(seen):
                if same_currency(s, c.currency):
                    seen[i] = more_specific(s, c.currency)
                    break
            else:
                seen.append(c.currency)
    out: list[AmountCand] = []
    for value, curs in currencies.items():
        if len(curs) <= 1:
            out.append(AmountCand(value, next(iter(curs), None)))
        else:
            out.extend(AmountCand(value, c) for c in sorted(curs))
    return out


__all__ = ["AMOUNT_RE", "AmountCand", "distinct_amounts", "extract_amounts",
           "fmt_amount", "interpret_number", "not_money"]
