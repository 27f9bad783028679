"""Typed field scoring: one gold value, one model answer, exactly one outcome.

Public API (small and stable)::

    from evalrun.evals.fields import score_field
    score_field(kind, gold, pred, **options) -> FieldScore

`kind` is one of amount, number, date, id, text, enum. `gold` is the reference
string, or None for a decoy field the document does not contain. `pred` is the
model's value or its whole free-text answer, or None; non-string JSON values
are accepted. Options: `dayfirst` (date, default True), `decimal` ("." or ",":
the decimal separator for the ambiguous "1.234" / "1,234"; by default both are
thousands in an amount, and "1.234" is 1.234 in a number), `allowed` and
`synonyms` (enum). Unknown options are ignored so that a Field's options dict
can carry other metadata.

Decisions (the spec leaves these open; tests pin them):

* Absent: empty markers (N/A, none, null, unknown, not found, -, ...) after
  stripping punctuation, on either side (a gold "N/A" is a decoy); an enum
  value listed in `allowed`/`synonyms` ("none") is never a marker. For typed kinds (amount/number/date/id) an answer that
  starts with a marker and has no digit ("Not found in the document.") is
  absent too. For a decoy, a typed answer in which no typed value can be found
  ("There is no due date.") is correct_absent, not hallucinated: no value was
  given. With a gold value, a sentence of more than three words without any
  digit is `missing` (the field was dropped: "The document does not say.", a
  broken model's babble); a short value-like answer that does not parse
  ("five euros", "14,851.2O") is wrong_value/unparseable.
* Free text: every typed candidate is extracted; repeats of one value are fine,
  several different values are never credited ("ambiguous: several candidates",
  subcode None) even when one of them equals the gold. Dates are masked before
  numbers are read, so "14 March 2024" is not 14 and 2024; bare years ("in
  2024") are still number candidates. Digits glued to letters or ids (A123,
  INV-2024-001), ranges (5-10) and times (10:30) are not numbers.
* Parentheses mean negative when the parenthesised amount ends the answer and
  no other number precedes it ("(1,234.50)", "Net result: (1,234.50)."); text
  after it or an earlier number makes it an aside ("The total (EUR 5) is due",
  "EUR 5 (5 EUR)").
* Amount/number wrong-value sub-code priority: sign_flip (|pred| == |gold|,
  signs differ) > scale_error (same significant digits, other power of 10,
  e.g. 0.125 vs 12.5%) > rounding (same sign, the two precisions differ and
  |diff| < one unit of the coarser; a value whose decimals are all zeros counts
  as an integer, so 14851.20 vs 14851.00 is rounding but 14851.20 vs 14851.30 is
  digit_changed; symmetric in gold and pred) > digit edits. Digit edits compare
  the digit strings (as written, and with trailing fractional zeros removed;
  the pair with fewer edits wins): one adjacent swap -> digits_transposed, one
  deletion -> digit_dropped, one insertion -> digit_inserted, one substitution
  -> digit_changed; two edits of one kind -> that kind (two substitutions or a
  mix -> digit_changed); more than two -> no sub-code (another number, not a
  slip). currency_mismatch
  only when the values are equal and both sides name a currency; a one-sided
  currency is not penalised. Number fields ignore currency; "12.5%" is 12.5.
* Dates: compared at the gold's precision (gold 2024-03 accepts 2024-03-14).
  A prediction lacking a part the gold has ("March 14" for 2024-03-14) is
  wrong_value, subcode None, detail "incomplete: ..."; nothing is filled from
  today. Sub-codes: day_month_swap > off_by_one_day > wrong_year. Two-digit
  years pivot 00-69 -> 20xx. Compact 20240314 and a bare year are read only as
  a whole value.
* Ids: exact after normalisation, no fuzzy credit. transposition > one_char_edit
  > prefix_or_suffix. An answer that normalises to the gold as a whole is
  correct; otherwise runs of id-ish tokens joined by spaces are candidates
  (tokens with a digit, short all-caps codes; label words ID/VAT/REF/... are
  not part of an id). In prose, dates and amounts are masked first and
  candidates under three characters ("3 items") dropped.
* Text: similarity is rapidfuzz Levenshtein.normalized_similarity on the
  normalised strings. truncated (pred is a strict prefix of gold) and
  word_order (same words, other order) ride along with whatever outcome the
  similarity gives (near_match / partial / wrong_value).
* Enum: a pred outside `allowed` is wrong_value/invalid_value; in prose the
  allowed values and synonyms are looked up as whole words, negated mentions
  ("not paid") skipped. Text answers are compared whole (no extraction).
* JSON values: numbers are read from their exact repr, booleans as "true" /
  "false", singleton lists unwrapped, lists of scalars joined (several values
  are ambiguous), empty containers absent; an object or nested list is
  wrong_value (unparseable for amount/number/date) or, for a decoy,
  hallucinated.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable

from rapidfuzz.distance import OSA, Levenshtein

from evalrun.contract.types import FieldScore
from evalrun.evals.numeric_subcodes import numeric_subcode
from evalrun.values.amounts import AmountCand, fmt_amount
from evalrun.values.coerce import coerce
from evalrun.values.dates import DateParts, fmt_date
from evalrun.values.enums import enum_lookup
from evalrun.values.ids import norm_id
from evalrun.values.kinds import CANDIDATES, KINDS, TYPED_KINDS, gold_value, is_absent_value
from evalrun.values.text import norm_text

OUTCOMES = ("correct", "near_match", "partial", "wrong_value", "missing", "hallucinated", "correct_absent")
NUMERIC_SUBCODES = (
    "sign_flip", "scale_error", "rounding", "digits_transposed", "digit_dropped",
    "digit_inserted", "digit_changed", "currency_mismatch", "unparseable",
)
SUBCODES: dict[str, tuple[str, ...]] = {
    "amount": NUMERIC_SUBCODES,
    "number": tuple(c for c in NUMERIC_SUBCODES if c != "currency_mismatch"),
    "date": ("day_month_swap", "off_by_one_day", "wrong_year", "unparseable"),
    "id": ("transposition", "one_char_edit", "prefix_or_suffix"),
    "text": ("truncated", "word_order"),
    "enum": ("invalid_value",),
}
AMBIGUOUS = "ambiguous: several candidates"
NEAR_MATCH, PARTIAL = 0.9, 0.5
_NORM_MAX = 1000  # normalised strings stored in a FieldScore are capped

Verdict = tuple[str, str | None, str | None]  # outcome, subcode, detail


def _cap(s: str | None) -> str | None:
    return s if s is None or len(s) <= _NORM_MAX else s[: _NORM_MAX - 1] + "\u2026"


# ---------------------------------------------------------------- amount / number


def _amount_handler(use_currency: bool) -> dict[str, Any]:
    def fmt(c: AmountCand) -> str:
        return fmt_amount(c.value, c.currency if use_currency else None)

    def compare(g: AmountCand, p: AmountCand, opts: dict[str, Any]) -> Verdict:
        cur_differs = use_currency and g.currency and p.currency and g.currency != p.currency
        if g.value == p.value:
            if cur_differs:
                return "wrong_value", "currency_mismatch", f"{g.currency} != {p.currency}"
            return "correct", None, None
        return "wrong_value", numeric_subcode(g.value, p.value), ("currency also differs" if cur_differs else None)

    kind = "amount" if use_currency else "number"
    return {"cands": CANDIDATES[kind], "fmt": fmt, "compare": compare, "unparseable": "unparseable"}


# ---------------------------------------------------------------- date


def _date_compare(g: DateParts, p: DateParts, opts: dict[str, Any]) -> Verdict:
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

_HANDLERS: dict[str, dict[str, Any]] = {
    "amount": _amount_handler(True),
    "number": _amount_handler(False),
    "date": _DATE,
    "id": _ID,
    "text": _TEXT,
    "enum": _ENUM,
}


def _is_prose_without_digits(pred: str) -> bool:
    """A free-text answer of several words and no digit at all ("The document does
    not say.", a model's babble) offers no value; a short value-like string that
    fails to parse ("fourteen thousand") is an unparseable value instead."""
    return not any(ch.isdigit() for ch in pred) and len(pred.split()) > 3


def _score(kind: str, gold: str | None, pred: str | None, note: str | None, opts: dict[str, Any]) -> FieldScore:
    h = _HANDLERS[kind]
    fmt: Callable[[Any], str] = h["fmt"]
    gold_absent = gold is None or is_absent_value(kind, gold, opts)
    pred_absent = pred is None or is_absent_value(kind, pred, opts)
    g = None if gold_absent else gold_value(kind, gold, opts)  # type: ignore[arg-type]
    gold_norm = None if gold_absent else (fmt(g) if g is not None else norm_text(gold))  # type: ignore[arg-type]
    if gold_absent and pred_absent:
        return FieldScore(outcome="correct_absent")
    if pred_absent:
        return FieldScore(outcome="missing", gold_norm=_cap(gold_norm))
    assert pred is not None
    if note == "nonscalar":
        detail = "non-scalar value"
        if gold_absent:
            return FieldScore(outcome="hallucinated", pred_norm=_cap(pred), detail=detail)
        sub = "unparseable" if kind in ("amount", "number", "date") else None
        return FieldScore(outcome="wrong_value", subcode=sub, gold_norm=_cap(gold_norm), pred_norm=_cap(pred), detail=detail)
    if kind == "id" and g is not None and not gold_absent and norm_id(pred) == g:
        # The whole answer is the gold id: "0 CAD", "INV 2024 0042" need no
        # token heuristics (and cannot be a wrong value that happens to match).
        return FieldScore(outcome="correct", gold_norm=_cap(gold_norm), pred_norm=_cap(g))
    cands = h["cands"](pred, opts)
    pred_norm = _cap(" | ".join(fmt(c) for c in cands[:20])) if cands else None
    if gold_absent:
        if not cands and kind != "text":
            return FieldScore(outcome="correct_absent", detail=f"no {kind} value in answer")
        return FieldScore(outcome="hallucinated", pred_norm=pred_norm or _cap(norm_text(pred)))
    if g is None:  # reference not parseable as its kind: exact normalised text
        pn = norm_text(pred)
        ok = pn == gold_norm
        return FieldScore(outcome="correct" if ok else "wrong_value", gold_norm=_cap(gold_norm),
                          pred_norm=_cap(pn), detail=f"gold not parseable as {kind}")
    gold_norm = _cap(gold_norm)
    if not cands:
        if kind in TYPED_KINDS and _is_prose_without_digits(pred):
            # a sentence that states no value of the field's type: the field was dropped
            return FieldScore(outcome="missing", gold_norm=gold_norm, pred_norm=_cap(norm_text(pred)),
                              detail=f"no {kind} value in the answer")
        return FieldScore(outcome="wrong_value", subcode=h["unparseable"], gold_norm=gold_norm,
                          pred_norm=_cap(norm_text(pred)), detail=f"no {kind} value found")
    if len(cands) > 1:
        return FieldScore(outcome="wrong_value", gold_norm=gold_norm, pred_norm=pred_norm, detail=AMBIGUOUS)
    outcome, sub, detail = h["compare"](g, cands[0], opts)
    return FieldScore(outcome=outcome, subcode=sub, gold_norm=gold_norm, pred_norm=pred_norm, detail=detail)


def score_field(kind: str, gold: Any, pred: Any, **options: Any) -> FieldScore:
    """Score one field: typed normalisation, typed match rule, exactly one outcome.

    Raises ValueError only for an unknown `kind` (a harness bug); any model
    output, however hostile, yields a FieldScore.
    """
    if kind not in _HANDLERS:
        raise ValueError(f"unknown field kind {kind!r}; expected one of {KINDS}")
    gold_s, _ = coerce(gold)
    try:
        pred_s, note = coerce(pred)
        return _score(kind, gold_s, pred_s, note, options)
    except Exception as exc:  # noqa: BLE001 - last line of defence, never crash a run
        detail = f"scorer error: {type(exc).__name__}: {exc}"[:300]
        if gold_s is None:
            return FieldScore(outcome="hallucinated", detail=detail)
        return FieldScore(outcome="wrong_value", subcode=None, detail=detail)


__all__ = ["score_field", "numeric_subcode", "KINDS", "OUTCOMES", "SUBCODES", "AMBIGUOUS"]
