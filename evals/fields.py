"""Typed field scoring: one gold value, one model answer, exactly one outcome.

Public API (small and stable)::

    from evalrun.evals.fields import score_field
    score_field(kind, gold, pred, **options) -> FieldScore

`kind` is a registered field type (amount, number, date, id, text, enum, ...:
one file each under values/types/). `gold` is the reference string, or None
for a decoy field the document does not contain. `pred` is the model's value
or its whole free-text answer, or None; non-string JSON values are accepted.

Each type's options, match rules and sub-codes are in docs/field-types.md,
generated from the type classes (`python -m evalrun.values.docs`). Every type
takes `field`, the field's name (evals.scoring passes it), and `aliases: [..]`,
other names for it; they let list answers and refusals be read clause by
clause. An option of the type that it cannot read (a bad `date_order`,
`decimal`, `field`, `aliases`, ...) is a ValueError (a harness bug, like an
unknown kind); keys that are no option of the type are ignored so that a
Field's options dict can carry other metadata.

Decisions (the spec leaves these open; tests pin them):

* Absent: empty markers (N/A, none, null, unknown, not found, -, ...) after
  stripping punctuation, on either side (a gold "N/A" is a decoy); an enum
  value listed in `allowed`/`synonyms` ("none") is never a marker. For typed
  kinds (amount/number/date/id) an answer that starts with a marker and has no
  digit ("Not found in the document.") is absent too. For a decoy, a typed
  answer in which no typed value can be found ("There is no due date.") is
  correct_absent, not hallucinated: no value was given. With a gold value, a
  sentence of more than three words in which no token could even be a damaged
  value (none starts with a digit once dates are masked: "The document does
  not say.", a broken model's babble, copied lines whose digits belong to ids
  such as "EORI DE1234567890123") is `missing`: the field was dropped; a
  value-like answer that does not parse ("five euros", "The total is
  14,851.2O") is wrong_value/unparseable.
* Refusals (every kind): a clause that says the value is not there ("not
  found/named/stated/listed/specified", "The document does not mention the
  carrier.", "There is no PO number.", "I could not find ...", "No due date is
  given.") makes the answer `missing` (correct_absent for a decoy) when the
  denial names the field or has no subject of its own ("Not stated."), and
  when a denial of something else is all the answer holds. Numbers that point
  into the document ("Section 4", "page 2") are no value, nor is what sits
  inside a denial of the field ("The invoice dated 14 March 2024 does not
  state a due date"). A denial of the field beside a value stated for it
  ("¥1,335,900. The document does not mention the total.") is wrong_value,
  sub-code self_contradicting (hallucinated for a decoy); a value clause
  about another subject ("The subtotal is EUR 450. Not stated.") is not one.
  A denial of something else leaves the value standing ("The total is EUR
  500.00; no discount is mentioned."). Without `field`, only a bare denial
  counts as one of the field.
* Free text: every typed candidate is extracted; repeats of one value are fine,
  several different values are never credited ("ambiguous: several
  candidates", subcode None) even when one of them equals the gold, with one
  exception: when the clauses (lines, list items, sentences, ';'-parts) that
  name the field (all the words of `field` or of an alias, split on _ - and
  spaces, case-insensitive whole words, singular or plural; "subtotal" and
  "sub-total" do not name "total") hold exactly one value between them, that
  value is the answer (detail "chosen: ..."). Dates are masked before numbers
  are read, so "14 March 2024" is not 14 and 2024; bare years ("in 2024") are
  still number candidates. Digits glued to letters or ids (A123,
  INV-2024-001), ranges (5-10) and times (10:30) are not numbers. List
  markers opening a line ("1.", "2)", "(3)", "a)", "-", "*", "•") are not
  values: a bullet always, a number or letter when two or more lines are
  numbered or it is "1"/"a" ("24. It is due." still says 24).
* Per type (how values are read and compared, the wrong-value sub-codes and
  their priority): docs/field-types.md.
* Copied lines (evals/scoring.py, which knows the prompt): a free-text answer
  that only repeats lines of the document and offers several values or none
  readable is `missing` (the field was dropped, whatever digits the lines
  hold); a copied line with one value is read as that value.
* JSON values: numbers are read from their exact repr, booleans as "true" /
  "false", singleton lists unwrapped, lists of scalars joined (several values
  are ambiguous), empty containers absent; an object or nested list is
  wrong_value (unparseable for amount/number/date) or, for a decoy,
  hallucinated.
"""

from __future__ import annotations

from typing import Any, Callable

from evalrun.contract.types import FieldScore
from evalrun.values.coerce import coerce
from evalrun.values.field_clauses import named_value, read_refusal
from evalrun.values.ids import norm_id
from evalrun.values.kinds import KINDS, TYPED_KINDS, gold_value, is_absent_value, states_no_value
from evalrun.values.numeric_subcodes import numeric_subcode
from evalrun.values.registry import field_type, option_problem, unknown_type_message
from evalrun.values.text import drop_cut_repeat, norm_text
from evalrun.values.types._base import SELF_CONTRADICTING

OUTCOMES = ("correct", "near_match", "partial", "wrong_value", "missing", "hallucinated", "correct_absent")
# every type's sub-codes, as the type declares them (values/types/)
SUBCODES: dict[str, tuple[str, ...]] = {name: field_type(name).subcodes for name in KINDS}
AMBIGUOUS = "ambiguous: several candidates"
NAMED = "chosen: the one value in the clause naming the field"
REFUSAL = "refusal: the answer says the field has no value"
SELF_CONTRADICTING_DETAIL = "self-contradicting: the answer states a value and says the field has none"
_NORM_MAX = 1000  # normalised strings stored in a FieldScore are capped


def _cap(s: str | None) -> str | None:
    return s if s is None or len(s) <= _NORM_MAX else s[: _NORM_MAX - 1] + "\u2026"


def _refusal(kind: str, pred: str, gold_absent: bool, gold_norm: str | None, opts: dict[str, Any]) -> FieldScore | None:
    """A refusal is missing (or, for a decoy, correct_absent); a refusal beside a
    value stated for the field is never credited: self_contradicting (hallucinated
    for a decoy). None when the answer is no refusal."""
    ref = read_refusal(kind, pred, opts)
    if ref is None or not (ref.relevant or not ref.states_value):
        return None
    pn = _cap(norm_text(pred))
    if ref.relevant and ref.states_value:
        if gold_absent:
            return FieldScore(outcome="hallucinated", pred_norm=pn, detail=SELF_CONTRADICTING_DETAIL)
        return FieldScore(outcome="wrong_value", subcode=SELF_CONTRADICTING, gold_norm=_cap(gold_norm),
                          pred_norm=pn, detail=SELF_CONTRADICTING_DETAIL)
    if gold_absent:
        return FieldScore(outcome="correct_absent", detail=REFUSAL)
    return FieldScore(outcome="missing", gold_norm=_cap(gold_norm), pred_norm=pn, detail=REFUSAL)


def _score(kind: str, gold: str | None, pred: str | None, note: str | None, opts: dict[str, Any]) -> FieldScore:
    h = field_type(kind)
    fmt: Callable[[Any], str] = h.fmt
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
    if (refused := _refusal(kind, pred, gold_absent, gold_norm, opts)) is not None:
        return refused
    if kind == "id" and g is not None and not gold_absent and norm_id(pred) == g:
        # The whole answer is the gold id: "0 CAD", "INV 2024 0042" need no
        # token heuristics (and cannot be a wrong value that happens to match).
        return FieldScore(outcome="correct", gold_norm=_cap(gold_norm), pred_norm=_cap(g))
    cands = h.candidates(pred, opts)
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
        if kind in TYPED_KINDS and states_no_value(kind, pred):
            # a sentence that states no value of the field's type, not even a damaged one: the field was dropped
            return FieldScore(outcome="missing", gold_norm=gold_norm, pred_norm=_cap(norm_text(pred)),
                              detail=f"no {kind} value in the answer")
        return FieldScore(outcome="wrong_value", subcode=h.unparseable, gold_norm=gold_norm,
                          pred_norm=_cap(norm_text(pred)), detail=f"no {kind} value found")
    chosen, note = cands[0], None
    if len(cands) > 1:
        chosen = named_value(kind, pred, opts)
        if chosen is None:
            return FieldScore(outcome="wrong_value", gold_norm=gold_norm, pred_norm=pred_norm, detail=AMBIGUOUS)
        pred_norm, note = _cap(fmt(chosen)), NAMED
    outcome, sub, detail = h.compare(g, chosen, opts)
    detail = "; ".join(d for d in (note, detail) if d) or None
    return FieldScore(outcome=outcome, subcode=sub, gold_norm=gold_norm, pred_norm=pred_norm, detail=detail)


def _check_options(kind: str, options: dict[str, Any]) -> None:
    """Options are the harness's, not the model's: a bad one is a ValueError."""
    if (problem := option_problem(kind, options)) is not None:
        raise ValueError(f"option {problem[0]}: {problem[1]}")


def score_field(kind: str, gold: Any, pred: Any, **options: Any) -> FieldScore:
    """Score one field: typed normalisation, typed match rule, exactly one outcome.

    Raises ValueError only for an unknown `kind` or a bad option (`date_order`,
    `field`, `aliases`: harness bugs); any model output, however hostile,
    yields a FieldScore.
    """
    if kind not in SUBCODES:
        raise ValueError(unknown_type_message(kind))
    _check_options(kind, options)
    gold_s, _ = coerce(gold)
    try:
        pred_s, note = coerce(pred)
        return _score(kind, gold_s, drop_cut_repeat(pred_s) if pred_s else pred_s, note, options)
    except Exception as exc:  # noqa: BLE001 - last line of defence, never crash a run
        detail = f"scorer error: {type(exc).__name__}: {exc}"[:300]
        if gold_s is None:
            return FieldScore(outcome="hallucinated", detail=detail)
        return FieldScore(outcome="wrong_value", subcode=None, detail=detail)


__all__ = ["score_field", "numeric_subcode", "KINDS", "OUTCOMES", "SUBCODES", "AMBIGUOUS"]
