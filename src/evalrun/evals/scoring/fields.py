"""Typed field scoring: one gold value, one model answer, exactly one outcome.

Public API (small and stable)::

    from evalrun.evals.scoring.fields import score_field
    score_field(kind, gold, pred, *, context=None, **options) -> FieldScore

`kind` is a registered field type (amount, number, date, id, text, enum, ...:
one file each under values/types/). `gold` is the reference string, or None
for a decoy field the document does not contain. `pred` is the model's value
or its whole free-text answer, or None; non-string JSON values are accepted.
`context` is the prompt the model saw (evals.scoring passes `item.prompt`,
so the pipeline and this function read every answer the same).

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
  digit ("Not found in the document.") is absent too. For a decoy, only an
  answer that says the value is not given earns correct_absent (a marker, a
  refusal, in English, German, French, Spanish, Portuguese, Italian, Dutch,
  Japanese or Chinese: "nicht angegeben", "non indiqué", "no se indica",
  "記載なし"); an empty answer, babble, an echoed prompt or copied lines offering
  no single value are `missing`, and a value of any shape (an amount offered as a
  PO number, a date as a percentage) is `hallucinated`. JSON null or "" is "not
  given"; a JSON answer that cannot be read leaves a decoy `missing`. With a gold value, a
  sentence of more than three words in which no token could even be a damaged
  value (none starts with a digit once dates are masked: "The document does
  not say.", a broken model's babble, copied lines whose digits belong to ids
  such as "EORI DE1234567890123") is `missing`: the field was dropped; a
  value-like answer that does not parse ("five euros", "The total is
  14,851.2O") is wrong_value/unparseable. An enum answer with no allowed value is
  `missing` unless it offers one (a short answer, a currency named, an allowed name
  negated, or a clause naming the field with words after it: "The currency is that
  of India" is invalid_value; "The document contains 1Z 999 ..." is missing).
* Refusals (every kind): a clause that says the value is not there ("not
  found/named/stated/listed/specified", "The document does not mention the
  carrier.", "There is no PO number.", "I could not find ...", "No due date is
  given.") makes the answer `missing` (correct_absent for a decoy) when the
  denial names the field or has no subject of its own ("Not stated."), and
  when a denial of something else is all the answer holds. Numbers that point
  into the document ("Section 4", "page 2") are no value, nor is what sits
  inside a denial of the field ("The invoice dated 14 March 2024 does not
  state a due date"). A denial of the field beside a value stated for it
  ("¥1,335,900. The document does not mention the total.", and a value that is
  itself denied: "EUR 500.00 not found") is wrong_value,
  sub-code self_contradicting (hallucinated for a decoy); a value clause
  about another subject ("The subtotal is EUR 450. Not stated.") is not one.
  A denial of something else leaves the value standing ("The total is EUR
  500.00; no discount is mentioned."), as does a stray sentence about the
  document itself ("... is EUR 9,263.45. The document is not found."). Without `field`, only a bare denial
  counts as one of the field.
* Free text: every typed candidate is extracted; repeats of one value are fine,
  several different values are never credited ("ambiguous: several
  candidates", subcode None) even when one of them equals the gold, with one
  exception: when the clauses (lines, list items, sentences, ';'-parts) that
  name the field (all the words of `field` or of an alias, split on _ - and
  spaces, case-insensitive whole words, singular or plural; "subtotal" and
  "sub-total" do not name "total") hold exactly one value between them, that
  value is the answer (detail "chosen: ..."). With `context` (the prompt), the
  clauses holding every content word of the question ("What is the closing
  balance?") are read first, unless another clause whose subject is the
  question's words gives a second value; a clause naming the field's key with
  more ("the net amount") is about that other thing. Failing both, the one value
  left when the others sit in clauses whose subject is something else ("EUR
  500.00 (the subtotal is EUR 450.00)") is read. The question's own numbers and
  codes are no value, and an answer of only the question's words is missing. Dates are masked before numbers
  are read, so "14 March 2024" is not 14 and 2024; bare years ("in 2024") are
  still number candidates. Digits glued to letters or ids (A123,
  INV-2024-001), ranges (5-10) and times (10:30) are not numbers. List
  markers opening a line ("1.", "2)", "(3)", "a)", "-", "*", "•") are not
  values: a bullet always, a number or letter when two or more lines are
  numbered or it is "1"/"a" ("24. It is due." still says 24).
* Per type (how values are read and compared, the wrong-value sub-codes and
  their priority): docs/field-types.md.
* One value written twice is one candidate: restated in parentheses in another
  unit or currency ("412.6 kg (909.6 lb)", "EUR 1,200.00 (USD 1,296.00)": the
  first), repeated ("1,234.50, i.e. 1,234.50"), or a shared symbol beside one
  of its currencies ("$100 (USD 100)").
* A sign in words: one positive value and "the amount/balance/it is negative"
  (not "is not negative") reads as the negative value.
* Copied lines (with `context`; evals/scoring/_scoring.py passes the prompt): a
  non-text answer that only repeats lines of the prompt, or is nearly all runs
  of the document's words, is `missing` (the field was dropped, whatever
  digits it holds) unless it offers a value: a copied "label value" line with
  one value ("Nettobetrag 2.510,45 €": the distractor picked), or a clause
  about the field ("The balance from this assessment is $1,284.50."). A number
  inside a copied sentence about something else ("Zahlbar innert 30 Tagen,
  ...") is no answer. A cut-off repeat of an earlier list item is dropped.
* JSON values: numbers are read from their exact repr, booleans as "true" /
  "false", singleton lists unwrapped, lists of scalars joined (several values
  are ambiguous), empty containers absent; an object or nested list is
  wrong_value (unparseable for amount/number/date) or, for a decoy,
  hallucinated.
"""

from __future__ import annotations

from typing import Any, Callable

from evalrun.contract.types import FIELD_OUTCOMES, FieldScore
from evalrun.values.answer_sign import says_negative
from evalrun.values.answer_context import AnswerContext, asked_names, mask_echo, only_echo, read_context
from evalrun.values.clauses import Names
from evalrun.values.coerce import coerce
from evalrun.values.no_value import drop_cut_repeat_listed, is_copied, offered, shows_any_value, value_offered
from evalrun.values.field_clauses import named_value, read_refusal
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.loops import collapse_loops, is_list_marker_loop, mask_loops
from evalrun.values.registry import TYPES, unknown_type_message
from evalrun.values.text import norm_text
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
# the characters of an answer the scorer reads: a server ignoring max_tokens or an imported log may
# hand it megabytes; about 4,000 tokens of prose, far past any field's answer
ANSWER_MAX_CHARS = 16_384
CUT = "answer cut: the scorer read"


def _cap(s: str | None) -> str | None:
    return s if s is None or len(s) <= _NORM_MAX else s[: _NORM_MAX - 1] + "\u2026"


def _refusal(h: FieldType[Any], pred: str, gold_absent: bool, gold_norm: str | None, opts: Options,
             asked: Names) -> FieldScore | None:
    """A refusal is missing (or, for a decoy, correct_absent); a refusal beside a
    value stated for the field is never credited: self_contradicting (hallucinated
    for a decoy). None when the answer is no refusal."""
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
    """A decoy answered with something other than "not given": a value of any shape
    (an amount offered as a PO number, a date as a percentage) is hallucinated; an
    answer with no value at all (babble, an echoed prompt, copied lines offering no
    single value) is missing: it did not say the document has none."""
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
    # with the question known, an answer offering nothing for the field dropped it; without
    # it, only one with no value-like token at all did ("The total is 14,851.2O" is damaged)
    if copied or no_value or offers is False and typed or h.offers_in_words(pred, opts, asked) is False:
        # no value of the field's type, not even a damaged one, and none given for it: dropped
        return FieldScore(outcome="missing", gold_norm=gold_norm, pred_norm=_cap(norm_text(pred)),
                          detail=COPIED if copied else f"no {h.name} value in the answer")
    return FieldScore(outcome="wrong_value", subcode=h.unparseable, gold_norm=gold_norm,
                      pred_norm=_cap(norm_text(pred)), detail=f"no {h.name} value found")


def _read_unlooped(h: FieldType[Any], text: str, opts: Options, gold: Any) -> tuple[str, list[Any], bool]:
    """The answer's values once loops are set aside: (text, candidates, whether a loop was
    blanked). An answer that only repeats one value ("EUR 5 EUR 5 EUR 5 EUR 5") still
    states it; a loop of several values or of none ("2023-2024, 2023-2024, ...") is babble."""
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
    """Score one field: typed normalisation, typed match rule, exactly one outcome.

    `context` is the prompt exactly as the model saw it (document, separator,
    question), as the pipeline (evals.scoring) passes it: with it, copied document
    lines and an echoed question are told apart from an answer, and the question's
    words name the field. Raises ValueError only for an unknown `kind` or a bad
    option (`date_order`, `field`, `aliases`: harness bugs); any model output,
    however hostile, yields a FieldScore.
    """
    h = TYPES.find(kind) if isinstance(kind, str) else None  # the one registry lookup of a field
    if h is None:
        raise ValueError(unknown_type_message(kind))
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
