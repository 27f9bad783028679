"""Reading an answer clause by clause: the value in the clause naming the field, and refusals."""

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
    """Clauses (values.clauses), with an aside that has a subject of its own ("(the subtotal is EUR 450.00)")
    and a later part giving its value to an item of its own ("of which EUR 50.00 is shipping") split off."""
    out = []
    for clause in split_clauses(pred):
        asides = [m for m in _ASIDE.finditer(clause) if subject(m[1], False).strip()]
        if asides:
            clause = _ASIDE.sub(lambda m: " " if subject(m[1], False).strip() else m[0], clause).strip()
        out.extend(_item_parts(clause))
        out.extend(m[1].strip() for m in asides)
    return [c for c in out if c]


def _item_parts(clause: str) -> list[str]:
    """The clause and, split off, each later part giving its value to an item of its own by a verb or
    preposition ("including EUR 50.00 for shipping"); a share of the field stays (_whole_field_values)."""
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
    """The content words of a value clause's subject, a hyphenated word whole ("Sub-total"); a value word
    ("amount") counts only when the question asks for it."""
    return _content_words(subject(clause, whole), asked)


def _item_words(part: str) -> list[str]:
    """What a value part gives its value to: its subject, else its words up to a qualifier after the value
    ("EUR 50.00 is charged for shipping"; "EUR 1,300.00 with shipping" is a total: none)."""
    if own := _subject_words(part, False):
        return own
    digit = HAS_DIGIT.search(part)
    cut = _QUALIFIER.search(part, digit.end()) if digit else None
    return [w for w in _content_words(part[:cut.start()] if cut else part) if w not in _STANDING and w not in _BARE]


def about_field(clause: str, names: Names) -> bool:
    """Is a value clause about the field? Its subject is only the field's, the question's or value words
    ("Total: EUR 500"); "the net amount is ..." is about a net amount, whatever the field's key."""
    own = _subject_words(clause, True) or _item_words(clause)  # "EUR 50.00 is shipping": about shipping
    known = frozenset().union(*names) if names else frozenset()
    return all(w in known for w in own)


def _rival(h: FieldType, clauses: list[str], naming: list[str], asked: Names, opts: Options) -> bool:
    """Does another clause whose subject is the question's words give the field a second value ("The amount is
    120,000,000" when the loan amount is asked)? Then none is read; value words alone only right after the verb."""
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
    """The one value given for the field among several: in the clauses naming it as the question does, else as
    its name or aliases do (of those, the one in the unit asked: FieldType.in_asked_unit), else the one left
    when the answer attributes the others elsewhere ("EUR 500.00 (the subtotal is EUR 450.00)"); else None."""
    if not h.typed:
        return None
    clauses = answer_clauses(pred)
    known = frozenset().union(*asked, *opts.names)
    for names in (asked, opts.names):
        # asked, a clause naming the key with more ("the net amount" for the total) is about that other thing
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
    """The values of the naming clauses that do not speak of a share of the field ("..., which is 30% of the
    loan amount"); none when every one does: the field is then read from the other clauses."""
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
    """Does a clause with a value give it for the field? Yes when it names the field or is about nothing else
    ("¥1,335,900."); not when its subject is another ("The subtotal is EUR 450")."""
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
    """None when the answer denies nothing; else whether a denial concerns the field and whether a value is also
    stated. References into the document ("Section 4") and what sits inside a denial of the field are no value,
    unless the value is what is denied ("EUR 500.00 not found"); "The document is not found." denies no value."""
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
