"""Typed normalisers and free-text candidate extraction behind `evals.fields`.

Kept apart from the scoring rules so each parser can be read on its own. Every
function here is total: any string in, a value (or an empty tuple) out, never an
exception. Nothing is ever filled in from "today" or from the gold value: the
parsers see one string at a time.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import unicodedata
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, NamedTuple

# Inputs longer than this are parsed without the lru_cache, so that one huge
# model answer cannot pin megabytes in memory.
_CACHE_MAX_LEN = 4096


def prep(s: str) -> str:
    """NFKC (fullwidth digits, no-break spaces, fullwidth currency signs) only
    when the string is not plain ASCII, which keeps the common case cheap."""
    return s if s.isascii() else unicodedata.normalize("NFKC", s)


def _build_punct() -> str:
    """All BMP punctuation (Unicode category P*), built once at import."""
    return "".join(chr(i) for i in range(0x10000) if unicodedata.category(chr(i)).startswith("P"))


PUNCT = _build_punct()
_EDGE_STRIP = PUNCT + "`~|^ \t\r\n\f\v\u00a0\u202f\u2009\u3000"
_PUNCT_TO_SPACE = {ord(c): " " for c in PUNCT}
_PUNCT_TO_SPACE.update({ord("'"): None, ord("\u2019"): None})  # don't -> dont

# ---------------------------------------------------------------- coercion, absence


def coerce(value: Any) -> tuple[str | None, str | None]:
    """A model's JSON value as text: (text or None if absent, note).

    note is "nonscalar" for a non-empty object (or a list of lists), which is
    never a field value. Singleton lists are unwrapped; longer lists of scalars
    are joined with "; " so that several different values surface as
    ambiguous candidates; empty lists and objects are absent.
    """
    for _ in range(256):
        if isinstance(value, (list, tuple)) and len(value) == 1:
            value = value[0]
        else:
            break
    if value is None:
        return None, None
    if isinstance(value, str):
        return value, None
    if isinstance(value, bool):
        return ("true" if value else "false"), None
    if isinstance(value, int):
        try:
            return str(value), None
        except ValueError:  # more digits than int->str allows
            return format(Decimal(value), "f"), None
    if isinstance(value, (float, Decimal)):
        try:
            d = Decimal(repr(value)) if isinstance(value, float) else value
            return (format(d, "f") if d.is_finite() else str(value)), None
        except (InvalidOperation, ValueError):
            return str(value), None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace"), None
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)[:100]
        if not items:
            return None, None
        if all(v is None or isinstance(v, (str, int, float, Decimal)) for v in items):
            parts = [p for p in (coerce(v)[0] for v in items) if p is not None]
            return ("; ".join(parts) if parts else None), None
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if not value:
            return None, None
        try:
            return json.dumps(value, ensure_ascii=False, default=str)[:2000], "nonscalar"
        except Exception:  # noqa: BLE001 - unprintable keys/values, sets
            return str(type(value).__name__), "nonscalar"
    try:
        return str(value), None
    except Exception:  # noqa: BLE001
        return "<unprintable>", None


ABSENT_MARKERS = frozenset(
    {
        "", "n/a", "na", "n.a", "none", "null", "nil", "unknown", "not found",
        "not available", "not applicable", "not provided", "not specified",
        "not stated", "not mentioned", "not given", "not present", "no value",
    }
)
# A typed-field answer that starts with one of these and has no digit is a
# refusal ("Not found in the document."), not a value.
_ABSENT_PREFIXES = tuple(
    m + " " for m in ("n/a", "none", "null", "unknown", "not found", "not available",
                      "not applicable", "not provided", "not specified", "not stated",
                      "not mentioned", "not given", "not present")
)
_HAS_DIGIT = re.compile(r"\d")


def is_absent(s: str, prefix_rule: bool = False) -> bool:
    """Empty markers mean absent; surrounding punctuation and case are ignored."""
    if len(s) > 300 or _HAS_DIGIT.search(s):  # no marker holds a digit
        return False
    t = s.strip(_EDGE_STRIP)
    if not t:
        return True
    t = " ".join(t.casefold().split())
    if t in ABSENT_MARKERS:
        return True
    return prefix_rule and t.startswith(_ABSENT_PREFIXES)


# ---------------------------------------------------------------- text


@lru_cache(maxsize=65536)
def _norm_text_cached(s: str) -> str:
    return _norm_text(s)


def _norm_text(s: str) -> str:
    s = unicodedata.normalize("NFKC", s).casefold().translate(_PUNCT_TO_SPACE)
    return " ".join(s.split())


def norm_text(s: str) -> str:
    """NFKC, casefold, punctuation to space (apostrophes dropped), whitespace collapsed."""
    return _norm_text_cached(s) if len(s) <= _CACHE_MAX_LEN else _norm_text(s)


# ---------------------------------------------------------------- amounts / numbers

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
_AMOUNT_RE = re.compile(
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
    for m in _AMOUNT_RE.finditer(t):
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
    if len(text) > _CACHE_MAX_LEN:
        return _extract_amounts(text, decimal)
    return _extract_amounts_cached(text, decimal)


def fmt_amount(value: Decimal, currency: str | None = None) -> str:
    s = format(value, "f")
    return f"{s} {currency}" if currency else s


# ---------------------------------------------------------------- dates


class DateParts(NamedTuple):
    y: int | None
    m: int | None
    d: int | None


_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12,
    # German and French, cheap to have for multilingual documents.
    "januar": 1, "jänner": 1, "jän": 1, "februar": 2, "märz": 3, "mär": 3, "maerz": 3,
    "mai": 5, "juni": 6, "juli": 7, "oktober": 10, "okt": 10, "dezember": 12, "dez": 12,
    "janvier": 1, "janv": 1, "février": 2, "fevrier": 2, "févr": 2, "fevr": 2, "mars": 3,
    "avril": 4, "avr": 4, "juin": 6, "juillet": 7, "juil": 7, "août": 8, "aout": 8,
    "septembre": 9, "octobre": 10, "novembre": 11, "décembre": 12, "decembre": 12, "déc": 12,
}
# Written dates are found from their month word outwards: the few anchored
# matches around each month name are far cheaper than scanning the whole text
# with a 70-way month alternation per pattern.
_MONTH_WORD = re.compile(r"(?<![^\W\d_])[^\W\d_]{3,10}(?![^\W\d_])")
_BEFORE_D = re.compile(r"(?<![0-9])(?P<d>[0-9]{1,2})(?:st|nd|rd|th|er|\.)?(?:\s+of)?[\s\-/.,]*\Z", re.I)
_AFTER_D_Y = re.compile(r"\.?\s*(?P<d>[0-9]{1,2})(?:st|nd|rd|th)?(?:\s*,)?[\s\-/.,]*(?P<y>[0-9]{4})(?![0-9])", re.I)
_AFTER_Y = re.compile(r"\.?[\s\-/.,]*(?P<y>[0-9]{4})(?![0-9])")
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


def _match_parts(name: str, m: re.Match[str], dayfirst: bool) -> DateParts | None:
    g = m.groupdict()
    y = _two_digit_year(g["y"]) if g.get("y") else None
    if name == "dmy":
        a, b = int(g["a"]), int(g["b"])
        if a > 12 or (dayfirst and b <= 12):
            d, mo = a, b
        else:
            mo, d = a, b
    else:
        mo = int(g["m"])
        d = int(g["d"]) if g.get("d") else None
    return DateParts(y, mo, d) if _valid(y, mo, d) else None


def _written_date(t: str, w: re.Match[str], mo: int) -> list[tuple[int, int, DateParts]]:
    """The longest date around one month word, in this order of preference:
    14 March 2024, March 14, 2024, 2024 March 14, March 2024, 2024 March,
    14 March, March 14."""
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
    if after_y:
        cands.append((ws, after_y.end(), int(after_y["y"]), None))
    if before_y:
        cands.append((before_y.start(), we, int(before_y["y"]), None))
    yearless_ok = w.group() != "may"  # "EUR 12 may apply" is not a date
    if before and yearless_ok:
        cands.append((before.start(), we, None, int(before["d"])))
    if after_d and yearless_ok:
        cands.append((ws, after_d.end(), None, int(after_d["d"])))
    if not cands:
        return []
    start, end, y, d = cands[0]  # an invalid "31 February 2024" is no date, not "2024-02"
    return [(start, end, DateParts(y, mo, d))] if _valid(y, mo, d) else []


def find_dates(t: str, dayfirst: bool = True) -> list[tuple[int, int, DateParts]]:
    """Non-overlapping dates in prepared text, leftmost-longest first."""
    if not _HAS_DIGIT.search(t):
        return []
    patterns: list[tuple[str, re.Pattern[str]]] = []
    if "月" in t or "월" in t:
        patterns += _CJK_PATTERNS
    if _NUM_HINT.search(t):
        patterns += _NUMERIC_PATTERNS
    found: list[tuple[int, int, DateParts]] = []
    for name, rx in patterns:
        for m in rx.finditer(t):
            parts = _match_parts(name, m, dayfirst)
            if parts is not None:
                found.append((m.start(), m.end(), parts))
    for w in _MONTH_WORD.finditer(t):
        mo = _MONTHS.get(w.group().lower())
        if mo is not None:
            found.extend(_written_date(t, w, mo))
    if len(found) < 2:
        return found
    found.sort(key=lambda x: (x[0], x[0] - x[1]))
    out: list[tuple[int, int, DateParts]] = []
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


def _extract_dates(text: str, dayfirst: bool) -> tuple[DateParts, ...]:
    t = prep(text)
    found = [p for _, _, p in find_dates(t, dayfirst)]
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


def extract_dates(text: str, dayfirst: bool = True) -> tuple[DateParts, ...]:
    """All dates in `text` as (y, m, d) with None for parts not written."""
    if len(text) > _CACHE_MAX_LEN:
        return _extract_dates(text, dayfirst)
    return _extract_dates_cached(text, dayfirst)


def fmt_date(p: DateParts) -> str:
    if p.y is None:
        return f"--{p.m:02d}-{p.d:02d}" if p.d is not None else f"--{p.m:02d}"
    if p.m is None:
        return f"{p.y:04d}"
    return f"{p.y:04d}-{p.m:02d}" + (f"-{p.d:02d}" if p.d is not None else "")


# ---------------------------------------------------------------- ids

_ID_DROP = re.compile(r"[\s\-._/]+")
_ID_EDGE = ".,;:!?#'\"“”‘’()[]{}<>*`« »\t\r\n"
_ID_TOKEN = re.compile(r"[^\s,;:()\[\]{}<>\"“”‘’«»|*`]+")
_ID_LABELS = frozenset("ID PO VAT IBAN BIC SWIFT REF NO NR TAX EIN SSN UID OK".split()) | frozenset(ISO_CODES)


def norm_id(s: str) -> str:
    """Uppercase; spaces and - . / _ dropped; edge quotes, brackets and '#' too."""
    return _ID_DROP.sub("", prep(s).strip(_ID_EDGE).upper())


_GLUE = re.compile(r"[\w\-/.]")


def _mask_non_ids(t: str) -> str:
    """Blank out dates and amounts (with a currency, percent or comma grouping)
    that stand alone; spans glued to id characters ("INV-2024-03-14-7") stay."""
    spans = [(s, e) for s, e, _ in find_dates(t)]
    for m in _AMOUNT_RE.finditer(t):
        if m["c1"] or m["c2"] or m["pct"] or "," in m["num"]:
            spans.append(m.span())
    if not spans:
        return t
    chars = list(t)
    for s, e in spans:
        if (s > 0 and _GLUE.match(t, s - 1)) or (e < len(t) and t[e] not in ".,;:!?" and _GLUE.match(t, e)):
            continue
        chars[s:e] = " " * (e - s)
    return "".join(chars)


def _idish(tok: str, free: bool) -> bool:
    """A token that can be part of an id: has a digit; in prose also a short
    all-caps code ("INV"), in a bare value any code; never a label word."""
    if _HAS_DIGIT.search(tok):
        return True
    if not tok.isalnum() or tok.upper() in _ID_LABELS:
        return False
    return not free or (len(tok) <= 5 and tok.isupper())


def _is_prose(tokens: list[str]) -> bool:
    """Prose has a real word: one of 4+ letters, or two shorter ones ("inv 2024"
    is a value, "The invoice number is ..." is not)."""
    words = [tok for tok in tokens if len(tok) >= 2 and tok.isalpha() and not tok.isupper()]
    return len(words) >= 2 or any(len(w) >= 4 for w in words)


def _id_candidates(text: str) -> tuple[bool, tuple[str, ...]]:
    t = prep(text)
    matches = list(_ID_TOKEN.finditer(t))[:2000]
    tokens = [m[0].strip(_ID_EDGE) for m in matches]
    if len(tokens) <= 1:
        whole = norm_id(t)
        return False, ((whole,) if whole else ())
    free = _is_prose(tokens)
    if free:  # dates and amounts in a multi-field answer are not ids
        masked = _mask_non_ids(t)
        if masked != t:
            t = masked
            matches = list(_ID_TOKEN.finditer(t))[:2000]
            tokens = [m[0].strip(_ID_EDGE) for m in matches]
    # Runs of id-ish tokens separated only by spaces form one id ("INV 2024 0042");
    # a run counts when it holds a digit.
    cands: list[str] = []
    run: list[str] = []
    prev_end, prev_raw = -1, ""
    for m, tok in zip(matches, tokens):
        joined = prev_end >= 0 and not t[prev_end:m.start()].strip() and not prev_raw.endswith((".", "!", "?"))
        idish = bool(tok) and _idish(tok, free)
        if not (idish and joined and run):
            if run and any(_HAS_DIGIT.search(r) for r in run):
                cands.append(norm_id(" ".join(run)))
            run = []
        if idish:
            run.append(tok)
        prev_end, prev_raw = m.end(), m[0]
    if run and any(_HAS_DIGIT.search(r) for r in run):
        cands.append(norm_id(" ".join(run)))
    if free:  # a count in prose ("3 items") is not an id
        cands = [c for c in cands if len(c) >= 3]
    if not cands and not free:
        whole = norm_id(t)
        return False, ((whole,) if whole else ())
    if not cands:  # no digits anywhere: fall back to all-caps codes ("ABCDEF")
        cands = [norm_id(tok) for tok in tokens if len(tok) >= 3 and tok.isupper() and tok.isalnum() and tok not in _ID_LABELS]
    return free, tuple(c for c in cands if c)


_id_candidates_cached = lru_cache(maxsize=65536)(_id_candidates)


def id_candidates(text: str) -> tuple[bool, tuple[str, ...]]:
    """(is_free_text, normalised candidates). Runs of id-ish tokens joined by
    spaces are candidates ("ID: DE 1234 5678" -> DE12345678); without any, a
    value with no prose words is taken whole, and prose falls back to all-caps
    codes. In prose, dates and amounts are masked first and candidates shorter
    than three characters are dropped."""
    if len(text) > _CACHE_MAX_LEN:
        return _id_candidates(text)
    return _id_candidates_cached(text)


# ---------------------------------------------------------------- enums

_NEGATIONS = frozenset("not no never non isnt arent wasnt werent dont doesnt didnt".split())


def find_enum_values(norm_pred: str, lookup: dict[str, str]) -> list[str]:
    """Canonical values whose name or synonym occurs as whole words in the
    normalised answer, skipping negated mentions ("not paid")."""
    padded = f" {norm_pred} "
    found: list[str] = []
    for name, canon in lookup.items():
        if not name:
            continue
        start = 0
        needle = f" {name} "
        while (i := padded.find(needle, start)) != -1:
            prev = padded[:i].split()[-1:] or [""]
            if prev[0] not in _NEGATIONS:
                if canon not in found:
                    found.append(canon)
                break
            start = i + 1
    return found


__all__ = [
    "AmountCand", "DateParts", "coerce", "is_absent", "norm_text", "interpret_number",
    "extract_amounts", "fmt_amount", "currency_code", "find_dates", "mask_dates",
    "extract_dates", "fmt_date", "norm_id", "id_candidates", "find_enum_values",
]
