"""Reading an answer clause by clause: the value stated in the one clause that
names the field, and refusals ("The document does not mention the carrier.")."""

from __future__ import annotations

from typing import Any, NamedTuple

import re

from evalrun.values.clauses import Names, names_field, singular, split_clauses, subject, words
from evalrun.values.dates import MONTH_NAMES
from evalrun.values.denials import (
    BARE_WORDS, VALUE_WORDS, denial_targets, drop_document_denials, mask_references, may_deny,
)
from evalrun.values.text import HAS_DIGIT, norm_text, prep
from evalrun.values.types._base import FieldType, Options

_BARE = frozenset(singular(w) for w in BARE_WORDS) | frozenset(
    "section page line clause paragraph article table figure appendix schedule annex chapter".split())
_VALUE = frozenset(singular(w) for w in VALUE_WORDS)


_ASIDE = re.compile(r"\(([^()]*)\)")
# a comma or conjunction between parts of a sentence; not before a digit ("March 5, 2024")
_PART = re.compile(r",?\s+(?:and|but|whereas|while)\s+|,\s+(?=[^\W\d_])", re.I)
_GIVES = re.compile(r"(?i)\b(?:is|are|was|were|for|of|on|towards?|as)\b|:")


def answer_clauses(pred: str) -> list[str]:
    """Clauses (values.clauses), with a parenthesised aside that has a subject of its
    own ("EUR 500.00 (the subtotal is EUR 450.00)"), and a later part of a sentence that
    gives its value to an item of its own ("EUR 1,250.00, of which EUR 50.00 is
    shipping"), as clauses of their own."""
    out = []
    for clause in split_clauses(pred):
        asides = [m for m in _ASIDE.finditer(clause) if subject(m[1], False).strip()]
        if asides:
            clause = _ASIDE.sub(lambda m: " " if subject(m[1], False).strip() else m[0], clause).strip()
        out.extend(_item_parts(clause))
        out.extend(m[1].strip() for m in asides)
    return [c for c in out if c]


def _item_parts(clause: str) -> list[str]:
    """The clause, and apart from it each later part with a value that it gives to an
    item of its own ("and the discount is EUR 50.00", "including EUR 50.00 for
    shipping") once an earlier part has given a value: that value is not the first's. It
    gives it by a verb or preposition; other words beside a value ("24,85 Cent/kWh", "26 in
    Graz", "previously 26") say nothing of what the value is, and a share of the field
    ("which is 30% of the loan amount") stays (_whole_field_values)."""
    kept, apart, sep, at, valued = "", [], "", 0, False
    for m in [*_PART.finditer(clause), None]:
        part = clause[at:m.start() if m else len(clause)]
        digit = HAS_DIGIT.search(part) is not None
        if valued and digit and _GIVES.search(part) and not _FRACTION_OF.search(part) and _item_words(part):
            apart.append(part.strip())
        else:
            kept, valued = kept + sep + part, valued or digit
        if m is not None:
            sep, at = m[0], m.end()
    return [kept.strip(), *apart]


_FUNCTION = frozenset("from with within into onto over under after before between this that these those its their "
                      "which whom".split())
# how a sum stands, naming no item of its own: "EUR 1,300.00 is charged", "... is outstanding"
_STANDING = frozenset("""charged paid payable billed invoiced due owed owing outstanding remaining left unpaid open
applied added include included including plus excluding without deducted allocated attributed attributable
accounted spent goes went cover covers covered come comes and but""".split())
# after a value, what the sum takes in or leaves out: "EUR 1,300.00 with shipping" is a total, no shipping line
_QUALIFIER = re.compile(r"(?i)\b(?:with|including|incl|inc|inclusive|plus|excluding|excl|exclusive|without|after"
                        r"|before|less|minus|net)\b")


def _content_words(text: str, asked: frozenset[str] = frozenset()) -> list[str]:
    return [w for w in words(text) if len(w) >= 3 and w.replace("-", "").isalpha()
            and (w not in _VALUE or w in asked) and w not in _FUNCTION and w not in MONTH_NAMES]


def _subject_words(clause: str, whole: bool, asked: frozenset[str] = frozenset()) -> list[str]:
    """The content words of a value clause's subject; a hyphenated word counts whole
    ("Sub-total: EUR 450" is about a sub-total). A value word ("amount") is no content
    unless the question asks for it ("What loan amount ...?": "The amount is ...")."""
    return _content_words(subject(clause, whole), asked)


def _item_words(part: str) -> list[str]:
    """What a value part gives its value to: its subject ("the discount is EUR 50.00"),
    else its own words up to a qualifier after the value ("EUR 50.00 is charged for
    shipping", "of which EUR 50.00 is shipping", "after a deposit of EUR 300.00";
    "EUR 1,300.00 with shipping" is a total with shipping: none)."""
    if own := _subject_words(part, False):
        return own
    digit = HAS_DIGIT.search(part)
    cut = _QUALIFIER.search(part, digit.end()) if digit else None
    return [w for w in _content_words(part[:cut.start()] if cut else part) if w not in _STANDING and w not in _BARE]


def about_field(clause: str, names: Names) -> bool:
    """Is a value clause about the field asked for? Its subject (the words before
    "is"/":", else the whole clause) is nothing but the field's or the question's words
    ("Total: EUR 500" when the total is asked) or value words ("The amount is ...");
    "the net amount is ..." is about a net amount, whatever the field's key."""
    own = _subject_words(clause, True) or _item_words(clause)  # "EUR 50.00 is shipping": about shipping
    known = frozenset().union(*names) if names else frozenset()
    return all(w in known for w in own)


def _rival(h: FieldType, clauses: list[str], naming: list[str], asked: Names, opts: Options) -> bool:
    """Does another clause, whose subject is made of the question's words ("The total
    including tax is ¥ 1" when the quoted total including tax is asked, "The amount is
    120,000,000" when the loan amount is), give the field a second value? Then the answer
    states two and none is read. A subject of value words alone ("The amount") gives one
    only right after its verb."""
    chosen = h.candidates("\n".join(naming), opts)
    known = frozenset().union(*asked)
    for clause in clauses:
        if clause in naming or _FRACTION_OF.search(clause):
            continue  # a share of the field ("₹30 lakh, which is 30% of the loan amount") is no rival
        own = _subject_words(clause, False, known)
        if not own or not all(w in known for w in own):
            continue
        if not _subject_words(clause, False) and not _STATES_VALUE.search(clause):
            continue  # "The amount is payable in 240 EMIs of Rs. 1,05,000": the amount is not given here
        if any(c not in chosen for c in h.candidates(clause, opts)):
            return True
    return False


# a value right after the verb: "The amount is ₹1.20 lakh", "the amount is 30,00,000"
_STATES_VALUE = re.compile(r"(?i)\b(?:is|are|was|were)\s*:?\s+(?:[A-Z]{3}\s?|Rs\.?\s?)?[-+\u2212(]?[$€£¥₹]?\s?\d")


def named_value(h: FieldType, pred: str, opts: Options, asked: Names = ()) -> Any | None:
    """The one value the answer gives for the field, when it gives several: the one in
    the clauses that name the field as the question does ("What is the closing
    balance?": "The closing balance is 3,402.18. The amount is 1,450.00."), else as
    the field's name or aliases do ("1. The tenancy deposit is £1,673.07.\\n2. The
    monthly rent is £950.00." for tenancy_deposit), of several there the one written in
    the unit the question asks for (FieldType.in_asked_unit); else the one value left when the
    others are attributed to something else by the answer itself ("EUR 500.00 (the
    subtotal is EUR 450.00)"). None when no such reading gives exactly one value."""
    if not h.typed:
        return None
    clauses = answer_clauses(pred)
    known = frozenset().union(*asked, *opts.names)
    for names in (asked, opts.names):
        # with the question known, a clause naming the field's key but something more ("the net
        # amount" when the invoice total is asked) is about that other thing
        naming = [c for c in clauses if names and names_field(c, names)
                  and (names is asked or not asked or all(w in known for w in _subject_words(c, False)))]
        cands = h.candidates("\n".join(naming), opts) if naming else []
        if len(cands) > 1:
            cands = _whole_field_values(h, naming, opts)
        if len(cands) > 1 and (in_unit := h.in_asked_unit("\n".join(naming), opts, asked)) is not None:
            cands = [in_unit]  # "4.215 kWh x 24,85 Cent/kWh" when cents per kWh are asked
        if len(cands) > 1 or (cands and asked and _rival(h, clauses, naming, asked, opts)):
            return None
        if cands:
            return cands[0]
    names = asked + opts.names
    valued = [c for c in clauses if h.candidates(c, opts)]
    own = [c for c in valued if about_field(c, names) and not _FRACTION_OF.search(c)]  # a share is another thing
    if not own or len(own) == len(valued):
        return None
    cands = h.candidates("\n".join(own), opts)
    return cands[0] if len(cands) == 1 else None


_FRACTION_OF = re.compile(r"(?i)\d(?:[.,]\d+)?\s?%\s+(?:of|von|de|du|del|di)\s")


def _whole_field_values(h: FieldType, naming: list[str], opts: Options) -> list[Any]:
    """The values of the naming clauses that do not speak of a share of the field ("The
    amount is ₹30 lakh, which is 30% of the loan amount", "21.00% of the total to pay is
    2.574,00 €"): several clauses name the field, and one gives the field itself. None
    when every naming clause speaks of a share: the field is read from the other clauses."""
    whole = [c for c in naming if not _FRACTION_OF.search(c)]
    if len(whole) == len(naming):
        return h.candidates("\n".join(naming), opts)
    return h.candidates("\n".join(whole), opts) if whole else []  # only shares: read elsewhere


class Refusal(NamedTuple):
    relevant: bool  # a denial names the field, or has no subject of its own ("Not stated.")
    states_value: bool  # a value for the field stands outside the denials


def _content(text: str, filler: frozenset[str]) -> list[str]:
    return [w for w in words(text) if len(w) >= 3 and w.isalpha() and w not in filler and w not in MONTH_NAMES]


def _for_field(h: FieldType, clause: str, names: Names) -> bool:
    """Does a clause with a value give it for the field asked? Yes when it names the
    field or is about nothing else ("¥1,335,900.", "The amount is EUR 5"); not when
    its subject is another ("The subtotal is EUR 450", "The total is EUR 500")."""
    if not h.typed and not _content(clause, _BARE):
        return False  # "Sorry." is no text value
    if names_field(clause, names):
        return True
    return not _content(subject(clause, h.typed), _VALUE)


def _cands(h: FieldType, clause: str, opts: Options) -> list[Any]:
    """The clause's values; an id needs a digit here ("発注番号は記載されていません" is no id)."""
    if h.needs_digit and not HAS_DIGIT.search(clause):
        return []
    return h.candidates(clause, opts)


def read_refusal(h: FieldType, pred: str, opts: Options, asked: Names = ()) -> Refusal | None:
    """None when the answer denies nothing. Otherwise whether a denial concerns the
    field and whether the answer also states a value for it. Numbers pointing into
    the document ("Section 4 does not state a due date") are no value; nor, when
    the denial concerns the field, is anything inside the denial itself ("The
    invoice dated 14 March 2024 does not state a due date"), unless the value is
    what is denied ("EUR 500.00 not found": a value and a denial). A sentence
    about the document itself ("The document is not found.") denies no value."""
    if not may_deny(pred):
        return None
    clauses = split_clauses(mask_references(prep(pred)), fine=True)
    targets = [denial_targets(drop_document_denials(norm_text(c))) for c in clauses]
    denied = [bool(t) for t in targets]
    if not any(denied):
        return None
    names = opts.names + asked
    # the value is what is denied ("EUR 500.00 not found", "The total EUR 500 is not stated")
    denied_value = any(HAS_DIGIT.search(t) and not _content(t, _BARE | _VALUE) and _cands(h, c, opts)
                       for c, ts in zip(clauses, targets) for t in ts)
    relevant = denied_value or any(names_field(t, names) or not _content(t, _BARE) for ts in targets for t in ts)
    if not relevant:  # about something else: any value in the answer stands ("EUR 500 with no VAT shown")
        typed = h.typed
        return Refusal(False, any((typed or not d) and _cands(h, c, opts) and (typed or _content(c, _BARE))
                                  for c, d in zip(clauses, denied)))
    stated = [c for c, d in zip(clauses, denied) if not d and _cands(h, c, opts)]
    return Refusal(True, denied_value or any(_for_field(h, c, names) for c in stated))
