"""Reading an answer clause by clause: the value stated in the one clause that
names the field, and refusals ("The document does not mention the carrier.")."""

from __future__ import annotations

from typing import Any, NamedTuple

from evalrun.values.clauses import Names, field_names, names_field, singular, split_clauses, subject, words
from evalrun.values.dates import MONTH_NAMES
from evalrun.values.denials import BARE_WORDS, VALUE_WORDS, denial_targets, mask_references, may_deny
from evalrun.values.kinds import CANDIDATES, TYPED_KINDS
from evalrun.values.text import norm_text, prep

_BARE = frozenset(singular(w) for w in BARE_WORDS) | frozenset(
    "section page line clause paragraph article table figure appendix schedule annex chapter".split())
_VALUE = frozenset(singular(w) for w in VALUE_WORDS)


def named_value(kind: str, pred: str, opts: dict[str, Any]) -> Any | None:
    """The one value stated in the clauses that name the field ("1. The tenancy
    deposit is £1,673.07.\\n2. The monthly rent is £950.00." for tenancy_deposit),
    or None: no field name, no clause names it, or they hold no or several values."""
    names = field_names(opts)
    if not names or kind not in TYPED_KINDS:
        return None
    naming = [c for c in split_clauses(pred) if names_field(c, names)]
    if not naming:
        return None
    cands = CANDIDATES[kind]("\n".join(naming), opts)
    return cands[0] if len(cands) == 1 else None


class Refusal(NamedTuple):
    relevant: bool  # a denial names the field, or has no subject of its own ("Not stated.")
    states_value: bool  # a value for the field stands outside the denials


def _content(text: str, filler: frozenset[str]) -> list[str]:
    return [w for w in words(text) if len(w) >= 3 and w.isalpha() and w not in filler and w not in MONTH_NAMES]


def _for_field(kind: str, clause: str, names: Names) -> bool:
    """Does a clause with a value give it for the field asked? Yes when it names the
    field or is about nothing else ("¥1,335,900.", "The amount is EUR 5"); not when
    its subject is another ("The subtotal is EUR 450", "The total is EUR 500")."""
    if kind in ("text", "enum") and not _content(clause, _BARE):
        return False  # "Sorry." is no text value
    if names_field(clause, names):
        return True
    return not _content(subject(clause, kind in TYPED_KINDS), _VALUE)


def read_refusal(kind: str, pred: str, opts: dict[str, Any]) -> Refusal | None:
    """None when the answer denies nothing. Otherwise whether a denial concerns the
    field and whether the answer also states a value for it. Numbers pointing into
    the document ("Section 4 does not state a due date") are no value; nor, when
    the denial concerns the field, is anything inside the denial itself ("The
    invoice dated 14 March 2024 does not state a due date")."""
    if not may_deny(pred):
        return None
    clauses = split_clauses(mask_references(prep(pred)), fine=True)
    targets = [denial_targets(norm_text(c)) for c in clauses]
    denied = [bool(t) for t in targets]
    if not any(denied):
        return None
    names = field_names(opts)
    relevant = any(names_field(t, names) or not _content(t, _BARE) for ts in targets for t in ts)
    if not relevant:  # about something else: any value in the answer stands ("EUR 500 with no VAT shown")
        typed = kind in TYPED_KINDS
        return Refusal(False, any((typed or not d) and CANDIDATES[kind](c, opts) and (typed or _content(c, _BARE))
                                  for c, d in zip(clauses, denied)))
    stated = [c for c, d in zip(clauses, denied) if not d and CANDIDATES[kind](c, opts)]
    return Refusal(True, any(_for_field(kind, c, names) for c in stated))
