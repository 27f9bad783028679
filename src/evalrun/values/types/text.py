"""text: free text (a name, an address), graded by similarity."""

from __future__ import annotations

from typing import Any

from rapidfuzz.distance import Levenshtein

from evalrun.values.text import norm_text
from evalrun.values.types._base import SELF_CONTRADICTING, Example, FieldType, Options, Verdict

NEAR_MATCH, PARTIAL = 0.9, 0.5
_LEADS = (" is ", " are ", " was ", " were ")

RULES = f"""\
* Normalised: Unicode NFKC, casefold, punctuation to spaces (apostrophes dropped), whitespace
  collapsed. Equal, or the gold stated inside a sentence answer ("The supplier is X."), is correct.
* Otherwise the closest of the whole answer and its part after the last "is/are/was/were" is
  graded by rapidfuzz Levenshtein.normalized_similarity: >= {NEAR_MATCH} near_match, >= {PARTIAL}
  partial, else wrong_value (neither near_match nor partial counts as correct in strict scoring).
* truncated (the answer is a strict prefix of the gold) and word_order (same words, other order)
  ride along with whatever outcome the similarity gives.
"""


class Text(FieldType[Options]):
    name = "text"
    doc = "Free text, graded by similarity after normalisation (near_match, partial)."
    noun = "text"
    rules = RULES
    subcodes = ("truncated", "word_order", SELF_CONTRADICTING)
    hint = "text"
    quotes_document = True
    golds = (("Acme Corp", {}), ("  Acme,   CORP. ", {}))
    examples = {
        "truncated": (Example("Acme Global Widget Holdings", "Acme Global Widget"),),
        "word_order": (Example("Acme Global Widget", "Widget Global Acme"),),
        SELF_CONTRADICTING: (Example("Kestrel Freight", "The carrier is Kestrel Freight. The document does not "
                                     "mention the carrier.", {"field": "carrier"}),),
    }

    def candidates(self, s: str, opts: Options) -> list[Any]:
        return [n] if (n := norm_text(s)) else []

    def compare(self, g: str, p: str, opts: Options) -> Verdict:
        """Equal, or the gold inside a longer answer, is correct; otherwise graded by similarity."""
        if g == p:
            return "correct", None, None
        if len(p) > len(g) and f" {g} " in f" {p} ":
            return "correct", None, "found in a longer answer"
        tails = [p] + [p.rsplit(lead, 1)[1] for lead in _LEADS if lead in p]
        p = max(tails, key=lambda t: Levenshtein.normalized_similarity(g, t))
        sim = Levenshtein.normalized_similarity(g, p)
        outcome = "near_match" if sim >= NEAR_MATCH else "partial" if sim >= PARTIAL else "wrong_value"
        sub = None
        if p and len(p) < len(g) and g.startswith(p):
            sub = "truncated"
        elif len(g) == len(p) and sorted(g.split()) == sorted(p.split()):
            sub = "word_order"
        return outcome, sub, f"similarity {sim:.3f}"
