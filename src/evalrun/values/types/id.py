"""id: an identifier (invoice number, VAT id, IBAN) compared exactly after normalisation."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from rapidfuzz.distance import OSA, Levenshtein

from evalrun.values.ids import id_candidates, id_spans, norm_id
from evalrun.values.types._base import SELF_CONTRADICTING, Example, FieldType, Found, Verdict
from evalrun.values.types._spans import to_original

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


class Id(FieldType):
    name = "id"
    doc = "An identifier, compared exactly after dropping case, spaces and - . / _."
    noun = "an id"
    rules = RULES
    subcodes = ("transposition", "one_char_edit", "prefix_or_suffix", SELF_CONTRADICTING)
    typed = True
    golds = (("INV-2024-0042", {}), ("DE89 3704 0044 0532 0130 00", {}), ("po#7781", {}))
    examples = {
        "transposition": (Example("INV-2024-0042", "INV-2024-0024"),),
        "one_char_edit": (Example("INV-2024-0042", "INV-2024-0043"),),
        "prefix_or_suffix": (Example("INV-2024-0042", "2024-0042"),),
        SELF_CONTRADICTING: (Example("PO-7781", "The PO number is PO-7781. There is no PO number.",
                                     {"field": "po_number"}),),
    }

    def candidates(self, s: str, opts: dict[str, Any]) -> list[Any]:
        return list(dict.fromkeys(id_candidates(s)[1]))

    def find(self, s: str, opts: dict[str, Any]) -> list[Found]:
        return [Found(*to_original(s, a, b), c) for a, b, c in id_spans(s)[1]]

    def gold(self, s: str, opts: dict[str, Any]) -> Any | None:
        return norm_id(s) or None

    def gold_key(self, opts: dict[str, Any]) -> Hashable | None:
        return ()

    def compare(self, g: str, p: str, opts: dict[str, Any]) -> Verdict:
        return id_verdict(g, p)
