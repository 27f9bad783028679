"""Typed field scoring: one gold value, one model answer, exactly one outcome (`score_field`; `gold` None: a decoy).

Each type's rules: docs/field-types.md; the rules every type shares (decisions the spec leaves open, pinned by
tests): docs/scoring.md, "Decisions"."""

from __future__ import annotations

from typing import Any, Callable

from evalrun.contract.types import FIELD_OUTCOMES, FieldScore
from evalrun.values.answer_context import AnswerContext, asked_names, mask_echo, only_echo, read_context
from evalrun.values.clauses import Names
from evalrun.values.no_value import drop_cut_repeat_listed, is_copied, offered, shows_any_value, value_offered
from evalrun.values.field_clauses import named_value, read_refusal
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.loops import collapse_loops, is_list_marker_loop, mask_loops
from evalrun.values.registry import TYPES, field_type
from evalrun.values.text import coerce, norm_text, says_negative
from evalrun.values.types._base import SELF_CONTRADICTING, FieldType, Options

OUTCOMES = FIELD_OUTCOMES  # the contract's list: what a field of a generated answer can be
# every type's sub-codes, as the type declares them (values/types/)
SUBCODES: dict[str, tuple[str, ...]] = {name: t.subcodes for name, t in TYPES.items()}
AMBIGUOUS = "ambiguous: several candidates"
NAMED = "chosen: the one value in the clause naming the field"
REFUSAL = "refusal: the answer says the field has no value"
SELF_CONTRADICTING_DETAIL = "self-contradicting: the answer states a value and says the field has none"
COPIED = "the answer only repeats the document's own words: no value stated for the field"
ECHO = "the answer only repeats the question: no value stated"
EMPTY = "empty answer"
SIGN_IN_WORDS = "negative: the answer says so in words"
NO_VALUE_NO_REFUSAL = "no value, and no statement that the document gives none"
OTHER_SHAPE = "a value of another shape given for the field: no {kind} value in it"
NOT_OFFERED = "nothing given for the field: its values sit in babble or in words about other things"
LOOPING = "the answer loops (degenerate repetition): no value stated"
_NORM_MAX = 1000  # normalised strings stored in a FieldScore are capped
# the characters of an answer read (a server ignoring max_tokens may send megabytes): far past any field's answer
ANSWER_MAX_CHARS = 16_384
CUT = "answer cut: the scorer read"


def _cap(s: str | None) -> str | None:
    return s if s is None or len(s) <= _NORM_MAX else s[: _NORM_MAX - 1] + "\u2026"


def _refusal(h: FieldType[Any], pred: str, gold_absent: bool, gold_norm: str | None, opts: Options,
             asked: Names) -> FieldScore | None:
    """A refusal is missing (correct_absent for a decoy); beside a value stated for the field it is
    self_contradicting (hallucinated for a decoy). None when the answer is no refusal."""
    ref = read_refusal(h, pred, opts, asked)
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


def _decoy(h: FieldType[Any], pred: str, text: str, cands: list[Any], opts: Options, asked: Names,
           ctx: AnswerContext | None, pred_norm: str | None, id_given: bool | None) -> FieldScore:
    """A decoy not answered "not given": a value of any shape is hallucinated; no value at all (babble, an echo,
    copied lines) is missing: it did not say the document has none."""
    if (ctx is not None and not h.quotes_document and (len(cands) != 1 or not offered(h, text, opts, asked))
            and is_copied(pred, ctx)):
        return FieldScore(outcome="missing", pred_norm=pred_norm, detail=COPIED)
    if cands or id_given:
        return FieldScore(outcome="hallucinated", pred_norm=pred_norm or _cap(norm_text(pred)))
    if shows_any_value(text) or h.offers_in_words(pred, opts, asked):
        return FieldScore(outcome="hallucinated", pred_norm=_cap(norm_text(pred)),
                          detail=f"a value, though not of a {h.name}")
    return FieldScore(outcome="missing", pred_norm=_cap(norm_text(pred)), detail=NO_VALUE_NO_REFUSAL)


def _no_value(h: FieldType[Any], pred: str, text: str, gold_norm: str | None, opts: Options, asked: Names,
              id_given: bool, copied: bool, looped: bool) -> FieldScore:
    """An answer with a gold and no value of the field's type read from it."""
    if looped and not shows_any_value(text):
        return FieldScore(outcome="missing", gold_norm=gold_norm, pred_norm=_cap(norm_text(pred)), detail=LOOPING)
    if id_given:  # a value in the id's place that reads as none ("is 20", "is "This Agreement"")
        return FieldScore(outcome="wrong_value", gold_norm=gold_norm, pred_norm=_cap(norm_text(pred)),
                          detail="no id value found")
    typed = h.typed
    offers = value_offered(text, opts, asked) if typed and not copied else False
    no_value = typed and h.states_no_value(text)
    if offers and no_value:  # "The IBAN ... is: EUR250.00": a value of another shape given for the field
        return FieldScore(outcome="wrong_value", gold_norm=gold_norm, pred_norm=_cap(norm_text(pred)),
                          detail=OTHER_SHAPE.format(kind=h.name))
    # an answer offering nothing for the asked field dropped it; unasked, only one with no value-like token did
    if copied or no_value or offers is False and typed or h.offers_in_words(pred, opts, asked) is False:
        # no value of the field's type, not even a damaged one, and none given for it: dropped
        return FieldScore(outcome="missing", gold_norm=gold_norm, pred_norm=_cap(norm_text(pred)),
                          detail=COPIED if copied else f"no {h.name} value in the answer")
    return FieldScore(outcome="wrong_value", subcode=h.unparseable, gold_norm=gold_norm,
                      pred_norm=_cap(norm_text(pred)), detail=f"no {h.name} value found")


def _read_unlooped(h: FieldType[Any], text: str, opts: Options, gold: Any) -> tuple[str, list[Any], bool]:
    """(text, candidates, whether a loop was blanked): one value repeated still states it; other loops are babble."""
    whole = h.candidates(text, opts)
    if len(whole) == 1 and gold is not None and h.compare(gold, whole[0], opts)[0] == "correct":
        return text, whole, False  # the one value read is the gold: a loop around it restates it
    masked, units = mask_loops(text)
    if not units:
        return text, whole, False
    cands = h.candidates(masked, opts)
    if not cands and len(whole) == 1 and not any(is_list_marker_loop(u) for u in units) and {
            h.fmt(c) for u in units for c in h.candidates(u, opts)} == {h.fmt(whole[0])}:
        return collapse_loops(text), whole, False  # read as the value line it repeats
    return masked, cands, True


def _score(h: FieldType[Any], gold: str | None, pred: str | None, note: str | None, opts: Options,
           ctx: AnswerContext | None = None) -> FieldScore:
    fmt: Callable[[Any], str] = h.fmt
    gold_absent = gold is None or h.says_absent(gold, opts)
    pred_absent = pred is None or h.says_absent(pred, opts)
    g = None if gold is None or gold_absent else h.read_gold(gold, opts)
    gold_norm = None if gold is None or gold_absent else (fmt(g) if g is not None else norm_text(gold))
    if gold_absent and pred_absent:
        if pred is not None and not pred.strip():  # an empty answer says nothing about the field
            return FieldScore(outcome="missing", detail=EMPTY)
        return FieldScore(outcome="correct_absent")
    if pred_absent:
        return FieldScore(outcome="missing", gold_norm=_cap(gold_norm))
    assert pred is not None
    opts = h.reading_options(opts, pred, ctx.document if ctx is not None else None)  # the gold was read as written
    if note == "nonscalar":
        detail = "non-scalar value"
        if gold_absent:
            return FieldScore(outcome="hallucinated", pred_norm=_cap(pred), detail=detail)
        return FieldScore(outcome="wrong_value", subcode=h.nonscalar, gold_norm=_cap(gold_norm), pred_norm=_cap(pred),
                          detail=detail)
    question = ctx.question if ctx is not None else None
    asked = asked_names(question)
    if (refused := _refusal(h, pred, gold_absent, gold_norm, opts, asked)) is not None:
        return refused
    if only_echo(pred, question):
        return FieldScore(outcome="missing", gold_norm=_cap(gold_norm), pred_norm=_cap(norm_text(pred)), detail=ECHO)
    if g is not None and not gold_absent and h.whole_answer(pred) == g:  # no wrong value that happens to match
        return FieldScore(outcome="correct", gold_norm=_cap(gold_norm), pred_norm=_cap(g))
    # the question's own numbers are no value, nor are list markers (blanked before dates are)
    text, cands, looped = _read_unlooped(h, mask_list_markers(mask_echo(pred, question)), opts, g)
    id_given = h.offered_in_prose(text, opts, asked)
    if id_given is False:
        detail = "no id given for the field: the answer's codes belong to other things"
        if gold_absent:
            return FieldScore(outcome="missing", pred_norm=_cap(norm_text(pred)), detail=detail)
        return FieldScore(outcome="missing", gold_norm=_cap(gold_norm), pred_norm=_cap(norm_text(pred)), detail=detail)
    pred_norm = _cap(" | ".join(fmt(c) for c in cands[:20])) if cands else None
    if gold_absent:
        return _decoy(h, pred, text, cands, opts, asked, ctx, pred_norm, id_given)
    if g is None:  # reference not parseable as its kind: exact normalised text
        pn = norm_text(pred)
        ok = pn == gold_norm
        return FieldScore(outcome="correct" if ok else "wrong_value", gold_norm=_cap(gold_norm),
                          pred_norm=_cap(pn), detail=f"gold not parseable as {h.name}")
    gold_norm = _cap(gold_norm)

    def copied() -> bool:  # asked only where it decides something: the document's n-grams cost
        return ctx is not None and not h.quotes_document and is_copied(pred, ctx)

    if not cands:
        return _no_value(h, pred, text, gold_norm, opts, asked, bool(id_given), copied(), looped)
    chosen, note = cands[0], None
    if len(cands) > 1:
        chosen = named_value(h, text, opts, asked)
        if chosen is None:
            if ctx is not None and not offered(h, text, opts, asked) and copied():
                return FieldScore(outcome="missing", gold_norm=gold_norm, pred_norm=pred_norm, detail=COPIED)
            if h.typed and not offered(h, text, opts, asked) and value_offered(text, opts, asked) is False:
                return FieldScore(outcome="missing", gold_norm=gold_norm, pred_norm=pred_norm, detail=NOT_OFFERED)
            return FieldScore(outcome="wrong_value", gold_norm=gold_norm, pred_norm=pred_norm, detail=AMBIGUOUS)
        pred_norm, note = _cap(fmt(chosen)), NAMED
    elif ctx is not None and not offered(h, text, opts, asked) and copied():
        return FieldScore(outcome="missing", gold_norm=gold_norm, pred_norm=pred_norm, detail=COPIED)
    if h.sign_in_words and chosen.value > 0 and says_negative(text):
        chosen = chosen._replace(value=-chosen.value)  # "The amount is negative because ..."
        pred_norm, note = _cap(fmt(chosen)), "; ".join(n for n in (note, SIGN_IN_WORDS) if n)
    outcome, sub, compared = h.compare(g, chosen, opts)
    if outcome == "wrong_value" and h.typed and not offered(h, text, opts, asked) and value_offered(
            text, opts, asked) is False:
        # no credit either way; what a reviewer calls it: nothing was given for the field
        return FieldScore(outcome="missing", gold_norm=gold_norm, pred_norm=pred_norm, detail=NOT_OFFERED)
    return FieldScore(outcome=outcome, subcode=sub, gold_norm=gold_norm, pred_norm=pred_norm,  # pyright: ignore[reportArgumentType]
                      detail="; ".join(d for d in (note, compared) if d) or None)


def score_field(kind: str, gold: Any, pred: Any, *, context: str | None = None, **options: Any) -> FieldScore:
    """Score one field: exactly one outcome. With `context` (the prompt as the model saw it) copied lines and an echoed
    question are told apart and the question's words name the field. ValueError only for an unknown `kind` or a bad
    option; any model output yields a FieldScore."""
    h = field_type(kind)  # the one registry lookup of a field
    opts = h.options(options)  # validated once per field: a bad option is the harness's, not the model's
    gold_s, _ = coerce(gold)
    try:
        pred_s, note = coerce(pred)
        if pred_s is None or len(pred_s) <= ANSWER_MAX_CHARS:
            return _score(h, gold_s, drop_cut_repeat_listed(pred_s) if pred_s else pred_s, note, opts,
                          read_context(context))
        cut = f"{CUT}: its first {ANSWER_MAX_CHARS:,} of {len(pred_s):,} characters"
        s = _score(h, gold_s, drop_cut_repeat_listed(pred_s[:ANSWER_MAX_CHARS]), note, opts, read_context(context))
        return s.model_copy(update={"detail": "; ".join(d for d in (s.detail, cut) if d)})
    except Exception as exc:  # noqa: BLE001 - last line of defence, never crash a run
        detail = f"scorer error: {type(exc).__name__}: {exc}"[:300]
        if gold_s is None:
            return FieldScore(outcome="hallucinated", detail=detail)
        return FieldScore(outcome="wrong_value", subcode=None, detail=detail)


__all__ = ["ANSWER_MAX_CHARS", "score_field", "OUTCOMES", "SUBCODES", "AMBIGUOUS", "COPIED"]
