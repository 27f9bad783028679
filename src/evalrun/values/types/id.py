"""id: an identifier (invoice number, VAT id, IBAN) compared exactly after normalisation."""

from __future__ import annotations

import re
from typing import Any

from rapidfuzz.distance import OSA, Levenshtein

from evalrun.values.clauses import Names
from evalrun.values.field_clauses import about_field, answer_clauses
from evalrun.values.ids import id_candidates, id_spans, norm_id
from evalrun.values.text import HAS_DIGIT
from evalrun.values.types._base import SELF_CONTRADICTING, Example, FieldType, Found, Options, Verdict, to_original

RULES = """\
* Normalised: uppercase; spaces and - . / _ dropped; edge quotes, brackets and '#' too. Exact after
  normalisation, no fuzzy credit: one changed character is another id.
* An answer that normalises to the gold as a whole is correct; otherwise runs of id-ish tokens
  joined by spaces are candidates (tokens with a digit, short all-caps codes; label words
  ID/VAT/REF/... are not part of an id). In prose, dates and amounts are masked first and
  candidates under three characters ("3 items") dropped. An id is written in Latin letters and
  digits: a run of kana or ideographs alone ("カトト", what a loop of babble leaves) is none.
* Sub-codes: transposition > one_char_edit > prefix_or_suffix.
"""


def id_verdict(g: str, p: str) -> Verdict:
    """Equal ids are correct; otherwise the slip that explains the difference, if one does."""
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


_AFTER_COPULA = re.compile(r"(?i)\s(?:is|are|was|were|would be|reads|reads as)\s+|:\s*")
_LEAD = frozenset("the a an number no nr nr. no. ref reference id # simply just".split())
_QUOTED = re.compile(r"^[\"'“‘«]\S")


def _id_offered(answer: str, opts: Options, asked: Names) -> bool | None:
    """In prose an id is given right after the verb or colon of a clause about the field ("The quote number is
    YDL-Q-24-0588."), not deep in a description or behind another label; None where no clause tells."""
    names = asked + opts.names
    seen = False
    for clause in answer_clauses(answer):
        m = _AFTER_COPULA.search(f" {clause} ")
        if m is None:
            continue
        seen = True
        if not about_field(clause, names):
            continue
        toks = f" {clause} "[m.end():].split()
        while toks and toks[0].lower().strip(".:#") in _LEAD and len(toks) > 1:
            toks = toks[1:]
        if toks and (HAS_DIGIT.search(toks[0]) or _QUOTED.match(toks[0])
                     or (toks[0].strip(".,;") .isupper() and len(toks[0].strip(".,;")) >= 3)):
            return True
    return False if seen else None


class Id(FieldType[Options]):
    name = "id"
    doc = "An identifier, compared exactly after dropping case, spaces and - . / _."
    noun = "an id"
    rules = RULES
    subcodes = ("transposition", "one_char_edit", "prefix_or_suffix", SELF_CONTRADICTING)
    typed = True
    hint = "an identifier, exactly as written"
    dates_are_values = True
    needs_digit = True  # "発注番号は記載されていません" is no id
    golds = (("INV-2024-0042", {}), ("DE89 3704 0044 0532 0130 00", {}), ("po#7781", {}))
    examples = {
        "transposition": (Example("INV-2024-0042", "INV-2024-0024"),),
        "one_char_edit": (Example("INV-2024-0042", "INV-2024-0043"),),
        "prefix_or_suffix": (Example("INV-2024-0042", "2024-0042"),),
        SELF_CONTRADICTING: (Example("PO-7781", "The PO number is PO-7781. There is no PO number.",
                                     {"field": "po_number"}),),
    }

    def candidates(self, s: str, opts: Options) -> list[Any]:
        return list(dict.fromkeys(id_candidates(s)[1]))

    def find(self, s: str, opts: Options) -> list[Found]:
        return [Found(*to_original(s, a, b), c) for a, b, c in id_spans(s)[1]]

    def gold(self, s: str, opts: Options) -> Any | None:
        return norm_id(s) or None

    def compare(self, g: str, p: str, opts: Options) -> Verdict:
        return id_verdict(g, p)

    def whole_answer(self, answer: str) -> Any | None:
        # the whole answer is the id: "0 CAD", "INV 2024 0042" need no token heuristics
        return norm_id(answer)

    def offered_in_prose(self, text: str, opts: Options, asked: Names) -> bool | None:
        """With the question known, an id is what a clause about the field gives right after its verb."""
        return _id_offered(text, opts, asked) if asked and id_candidates(text)[0] else None
