"""A field's `locale` (a BCP 47 tag; "_" for "-"): the decimal separator of "1.234" and the order of a
numeric a/b/yyyy date, where the written form cannot tell (docs/scoring.md, 'Field options'). "ymd" (never
credited) where the year-first form is the norm or the country mixes orders, and for "en" with no region."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_TAG = re.compile(r"([A-Za-z]{2,3})(?:[-_]([A-Za-z]{4}))?(?:[-_]([A-Za-z]{2}|[0-9]{3}))?")
_COMMA = frozenset("de fr es it pt nl pl cs sk sl hr sr bs mk bg ro ru uk be lt lv et fi sv nb nn no da is "
                   "tr el hu id vi ca eu gl az kk uz ka hy af sq lb rm fo".split())
_DOT = frozenset("en ja zh ko th he hi bn ta te mr gu kn ml pa ur ms fil tl ga mt sw ar fa my km lo ne si "
                 "yue am zu xh".split())
_DECIMAL_REGION = {
    **{("de", r): "." for r in ("CH", "LI")}, ("it", "CH"): ".",
    **{("es", r): "." for r in ("MX", "US", "PR", "DO", "GT", "HN", "NI", "SV", "PA", "PE")},
    ("en", "ZA"): ",", **{("ar", r): "," for r in ("MA", "DZ", "TN")},
}
_MDY_REGIONS = frozenset("US PR PH FM MH PW AS GU MP UM VI".split())
_YMD_REGIONS = frozenset("CA ZA JP CN TW KR KP HU LT MN SE IR".split())
_YMD_LANGUAGES = frozenset("ja zh ko hu lt mn sv fa yue".split())
KNOWN_LANGUAGES = _COMMA | _DOT


def parse_locale(value: Any) -> tuple[str, str | None] | None:
    """(language, REGION or None) of a locale tag, or None when it is no tag this table knows."""
    if not isinstance(value, str) or not (m := _TAG.fullmatch(value.strip())):
        return None
    lang = m[1].lower()
    return (lang, m[3].upper() if m[3] else None) if lang in KNOWN_LANGUAGES else None


def locale_problem(value: Any) -> str | None:
    """What is wrong with a `locale` option, or None when it can be read."""
    if value is None:
        return None
    if not isinstance(value, str) or not _TAG.fullmatch(value.strip()):
        return f"locale must be a language tag such as de-CH, en-IN, ja-JP or fr-FR; got {value!r}"
    if parse_locale(value) is None:
        return (f"locale {value!r}: evalrun does not know the number and date conventions of language "
                f"{value.strip()[:3].split('-')[0].split('_')[0]!r}; give `decimal` and `date_order` instead")
    return None


def locale_decimal(value: Any) -> str | None:
    """The decimal separator ("." or ",") a locale writes, or None for no (readable) locale."""
    parsed = parse_locale(value)
    if parsed is None:
        return None
    lang, region = parsed
    if region and (lang, region) in _DECIMAL_REGION:
        return _DECIMAL_REGION[(lang, region)]
    return "," if lang in _COMMA else "."


def locale_date_order(value: Any) -> str | None:
    """The order of a numeric a/b/yyyy date in a locale ("ymd": ambiguous), or None for no readable locale."""
    parsed = parse_locale(value)
    if parsed is None:
        return None
    lang, region = parsed
    if region in _MDY_REGIONS:
        return "mdy"
    if region in _YMD_REGIONS or lang in _YMD_LANGUAGES or (lang == "en" and region is None):
        return "ymd"
    return "dmy"


# a number grouped with one sign and ending in decimals after the other settles which is decimal:
# "1,250.00" and "1'250.00" write '.', "1.250,00" writes ','
_SETTLED = re.compile(r"(?<![\d.,'’])\d{1,3}(?:([.,'’])\d{3})+([.,])\d{1,2}(?!\d|[.,]\d)")


@lru_cache(maxsize=256)
def written_decimals(text: str) -> frozenset[str]:
    """The decimal separators the numbers of `text` settle: one when it writes one convention, else none or both."""
    return frozenset(m[2] for m in _SETTLED.finditer(text) if m[1] != m[2])


def read_decimal(decimal: str | None, locale: str | None, default: str) -> str:
    """A field's decimal separator: its `decimal` option, else its `locale`'s, else `default`."""
    return decimal if decimal is not None else locale_decimal(locale) or default


__all__ = ["KNOWN_LANGUAGES", "locale_date_order", "locale_decimal", "locale_problem", "parse_locale",
           "read_decimal", "written_decimals"]
