"""The typed match rule of each field kind: how one gold value and one
candidate from the answer compare (outcome, sub-code, detail), with the reader
and the formatter the scorer (`evalrun.evals.fields`) uses for that kind."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from rapidfuzz.distance import OSA, Levenshtein

from evalrun.evals.numeric_subcodes import numeric_subcode
from evalrun.values.amounts import AmountCand, fmt_amount
from evalrun.values.currencies import same_currency
from evalrun.values.dates import AmbiguousDate, DateParts, fmt_date
from evalrun.values.enums import enum_lookup
from evalrun.values.kinds import CANDIDATES

NEAR_MATCH, PARTIAL = 0.9, 0.5

Verdict = tuple[str, str | None, str | None]  # outcome, subcode, detail


# ---------------------------------------------------------------- amount / number


def _amount_handler(use_currency: bool) -> dict[str, Any]:
    def fmt(c: AmountCand) -> str:
        return fmt_amount(c.value, c.currency if use_currency else None)

    def compare(g: AmountCand, p: AmountCand, opts: dict[str, Any]) -> Verdict:
        cur_differs = use_currency and g.currency and p.currency and not same_currency(g.currency, p.currency)
        if g.value == p.value:
            if cur_differs:
                return "wrong_value", "currency_mismatch", f"{g.currency} != {p.currency}"
            return "correct", None, None
        return "wrong_value", numeric_subcode(g.value, p.value), ("currency also differs" if cur_differs else None)

    kind = "amount" if use_currency else "number"
    return {"cands": CANDIDATES[kind], "fmt": fmt, "compare": compare, "unparseable": "unparseable"}


# ---------------------------------------------------------------- date


def _date_compare(g: DateParts, p: DateParts | AmbiguousDate, opts: dict[str, Any]) -> Verdict:
    if isinstance(p, AmbiguousDate):  # never credited, never a day/month swap
        return "wrong_value", None, f"ambiguous: {p.a:02d}/{p.b:02d}/{p.y} is either day or month first (date_order ymd)"
    names = ("year", "month", "day")
    lacking = [n for n, gv, pv in zip(names, g, p) if gv is not None and pv is None]
    if lacking:
        return "wrong_value", None, "incomplete: answer has no " + " or ".join(lacking)
    if all(gv is None or gv == pv for gv, pv in zip(g, p)):
        return "correct", None, None
    if g.m is not None and g.d is not None:
        year_ok = g.y is None or g.y == p.y
        if year_ok and g.m != g.d and (p.m, p.d) == (g.d, g.m):
            return "wrong_value", "day_month_swap", None
        try:
            gd = _dt.date(g.y if g.y is not None else 2000, g.m, g.d)
            pd = _dt.date(p.y if g.y is not None and p.y is not None else 2000, p.m or 1, p.d or 1)
            if abs((gd - pd).days) == 1:
                return "wrong_value", "off_by_one_day", None
        except ValueError:
            pass  # not a calendar date (e.g. 31 February): no day arithmetic to compare
    if g.y is not None and p.y != g.y and (g.m is None or g.m == p.m) and (g.d is None or g.d == p.d):
        return "wrong_value", "wrong_year", None
    return "wrong_value", None, None


_DATE = {
    "cands": CANDIDATES["date"],
    "fmt": fmt_date,
    "compare": _date_compare,
    "unparseable": "unparseable",
}


# ---------------------------------------------------------------- id


def _id_compare(g: str, p: str, opts: dict[str, Any]) -> Verdict:
    if g == p:
        return "correct", None, None
    if max(len(g), len(p)) <= 512:
        lev = Levenshtein.distance(g, p)
        if lev == 2 and OSA.distance(g, p) == 1:
            return "wrong_value", "transposition", None
        if lev == 1:
            return "wrong_value", "one_char_edit", None
    if g and p and (g.startswith(p) or p.startswith(g) or g.endswith(p) or p.endswith(g)):
        return "wrong_value", "prefix_or_suffix", None
    return "wrong_value", None, None


_ID = {
    "cands": CANDIDATES["id"],
    "fmt": lambda c: c,
    "compare": _id_compare,
    "unparseable": None,
}


# ---------------------------------------------------------------- text


_TEXT_LEADS = (" is ", " are ", " was ", " were ")


def _text_compare(g: str, p: str, opts: dict[str, Any]) -> Verdict:
    """Equal, or the gold stated inside a sentence answer ("The supplier is X."), is
    correct; otherwise the closest of the whole answer and its part after the last
    "is/are/was" is graded by similarity."""
    if g == p:
        return "correct", None, None
    if len(p) > len(g) and f" {g} " in f" {p} ":
        return "correct", None, "found in a longer answer"
    tails = [p] + [p.rsplit(lead, 1)[1] for lead in _TEXT_LEADS if lead in p]
    p = max(tails, key=lambda t: Levenshtein.normalized_similarity(g, t))
    sim = Levenshtein.normalized_similarity(g, p)
    outcome = "near_match" if sim >= NEAR_MATCH else "partial" if sim >= PARTIAL else "wrong_value"
    sub = None
    if p and len(p) < len(g) and g.startswith(p):
        sub = "truncated"
    elif len(g) == len(p) and sorted(g.split()) == sorted(p.split()):
        sub = "word_order"
    return outcome, sub, f"similarity {sim:.3f}"


_TEXT = {
    "cands": CANDIDATES["text"],
    "fmt": lambda c: c,
    "compare": _text_compare,
    "unparseable": None,
}


# ---------------------------------------------------------------- enum


def _enum_compare(g: str, p: str, opts: dict[str, Any]) -> Verdict:
    _, allowed = enum_lookup(opts)
    if allowed is not None and p not in allowed:
        return "wrong_value", "invalid_value", None
    return ("correct", None, None) if g == p else ("wrong_value", None, None)


_ENUM = {"cands": CANDIDATES["enum"], "fmt": lambda c: c, "compare": _enum_compare,
         "unparseable": "invalid_value"}


# ---------------------------------------------------------------- dispatch

HANDLERS: dict[str, dict[str, Any]] = {
    "amount": _amount_handler(True),
    "number": _amount_handler(False),
    "date": _DATE,
    "id": _ID,
    "text": _TEXT,
    "enum": _ENUM,
}
