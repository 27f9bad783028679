"""enum: one of a fixed set of values (a status, a currency code), with synonyms."""

from __future__ import annotations

import re
from collections.abc import Hashable
from functools import cached_property
from typing import Any

from pydantic import Field, field_validator

from evalrun.values.clauses import Names, names_field, split_clauses, words
from evalrun.values.currencies import currency_mentions
from evalrun.values.denials import BARE_WORDS, VALUE_WORDS
from evalrun.values.enums import EnumTable, enum_candidates, enum_lookup
from evalrun.values.text import norm_text, prep
from evalrun.values.types._base import (
    SELF_CONTRADICTING, Example, FieldType, Found, Options, Verdict, stripped, to_original,
)

RULES = """\
* Names and synonyms are looked up after text normalisation; a synonym reads as its value.
* A pred outside `allowed` is wrong_value/invalid_value; in prose the allowed values and synonyms
  are looked up as whole words, longest first (a shorter name inside a longer one matched is no
  second mention: "Canadian dollars" is only CAD with synonyms for "dollars" and "canadian
  dollars"), negated mentions ("not paid") skipped. A name is also found in the other grammatical
  number ("US dollar" for a synonym "us dollars"; a written entry always wins).
* In a currency field (every allowed value an ISO code) another ISO code written in capitals is a
  value too: "Kuwaiti dinar (DKK)" names two currencies and is not credited; a symbol names the
  allowed currency it stands for ("120,00 €" is EUR; "$" only when one allowed currency uses it).
* Without `allowed`, answers are compared whole (no extraction). An allowed value ("none") is never
  read as "no value".
"""


class EnumOptions(Options):
    allowed: list[str | int] | None = Field(default=None, description="the values the field may take")
    synonyms: dict[str | int, str | int] | None = Field(
        default=None, description="written names -> values, e.g. {settled: paid, canadian dollars: CAD}")

    @field_validator("allowed", mode="before")
    @classmethod
    def _allowed(cls, v: Any) -> Any:
        if v is not None and (not isinstance(v, (list, tuple)) or not v or not all(
                isinstance(a, (str, int)) and not isinstance(a, bool) for a in v)):
            raise ValueError(f"allowed must be a non-empty list of values; got {v!r}")
        return v

    @field_validator("synonyms", mode="before")
    @classmethod
    def _synonyms(cls, v: Any) -> Any:
        if v is not None and (not isinstance(v, dict) or not all(
                isinstance(k, (str, int)) and isinstance(w, (str, int)) for k, w in v.items())):
            raise ValueError(f"synonyms must map written names to values ({{settled: paid}}); got {v!r}")
        # a YAML `yes: paid` reads as "true", as written: pydantic would make the bool an int
        return v if v is None else {str(k) if isinstance(k, bool) else k: str(w) if isinstance(w, bool) else w
                                    for k, w in v.items()}

    @cached_property
    def table(self) -> EnumTable:
        """(name or synonym -> canonical value, the allowed set or None), built once per field."""
        return enum_lookup(self.allowed, self.synonyms)


_FILLER = BARE_WORDS | VALUE_WORDS | frozenset(
    "following contain contains containing listed list currency currencies values type kind".split())
_LETTER = re.compile(r"[^\W\d_]")
_ANSWER_IS = re.compile(r"(?i)\banswer (?:is|would be|will be)\b")
_COPULA = re.compile(r"\s(?:is|are|was|were|would be)\s|[:=]")


def _offers_value(answer: str, opts: EnumOptions, asked: Names) -> bool:
    """Does an answer with no allowed value still offer one ("Pending", "The currency is that of India")? A short
    answer or a clause naming the field with words after it does; babble and digits alone (letter values) do not."""
    lookup, allowed = opts.table
    if not _LETTER.search(answer) and allowed and all(_LETTER.search(a) for a in allowed):
        return False
    if len(answer.split()) <= 3 or currency_mentions(answer, words=True):
        return True  # a short answer, or a currency named ("$5 and $7" when USD and CAD are allowed)
    padded = f" {norm_text(answer)} "
    if any(f" {name} " in padded for name in lookup if name):
        return True  # an allowed name, if negated ("The invoice is not paid.")
    names = asked + opts.names
    if not names:
        return True  # nothing tells what the answer is about: every answer is taken as one
    name_words = frozenset().union(*names)
    for clause in split_clauses(answer):
        if not (names_field(clause, names) or _ANSWER_IS.search(clause)):
            continue
        cut = list(_COPULA.finditer(f" {clause} "))
        rest = f" {clause} "[cut[-1].end():] if cut else clause
        if any(len(w) >= 3 and w.isalpha() and w not in _FILLER and w not in name_words for w in words(rest)):
            return True
    return False


def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + r"\W+".join(map(re.escape, name.split())) + r"(?!\w)", re.I)


class Enum(FieldType[EnumOptions]):
    name = "enum"
    doc = "One of a fixed set of values (`allowed`), written names mapped by `synonyms`."
    noun = "one of the allowed values"
    rules = RULES
    subcodes = ("invalid_value", SELF_CONTRADICTING)
    Options = EnumOptions
    unparseable = "invalid_value"
    hint = "one value"
    _OPTS = {"allowed": ["paid", "unpaid", "overdue"], "synonyms": {"settled": "paid"}}
    golds = (("paid", _OPTS), ("settled", _OPTS), ("EUR", {"allowed": ["EUR", "USD"]}))
    examples = {
        "invalid_value": (Example("paid", "pending", _OPTS),),
        SELF_CONTRADICTING: (Example("paid", "The status is paid. The document does not state the status.",
                                     {**_OPTS, "field": "status"}),),
    }

    def candidates(self, s: str, opts: EnumOptions) -> list[Any]:
        return enum_candidates(s, opts.table)

    def find(self, s: str, opts: EnumOptions) -> list[Found]:
        """Each value at its first written name (the whole answer where it is one name)."""
        values = self.candidates(s, opts)
        lookup = opts.table[0]
        t = prep(s)
        out = []
        for v in values:
            names = sorted((n for n, c in lookup.items() if c == v), key=len, reverse=True) or [v]
            hit = next((m for n in names if n and (m := _name_pattern(n).search(t))), None)
            out.append(Found(*to_original(s, *hit.span()), v) if hit else Found(*stripped(s), v))
        return out

    def gold(self, s: str, opts: EnumOptions) -> Any | None:
        n = norm_text(s)
        return opts.table[0].get(n, n) or None  # a synonym reads as its value

    def gold_key(self, opts: EnumOptions) -> Hashable | None:
        return None  # the table is the options' own

    def compare(self, g: str, p: str, opts: EnumOptions) -> Verdict:
        allowed = opts.table[1]
        if allowed is not None and p not in allowed:
            return "wrong_value", "invalid_value", None
        return ("correct", None, None) if g == p else ("wrong_value", None, None)

    def says_absent(self, s: str, opts: EnumOptions) -> bool:
        # "none" may be a legitimate enum value: an allowed one never says "no value"
        return norm_text(s) not in opts.table[0] and super().says_absent(s, opts)

    def gold_accepted(self, value: Any, opts: EnumOptions) -> bool:
        allowed = opts.table[1]
        return allowed is None or value in allowed

    def offers_in_words(self, answer: str, opts: EnumOptions, asked: Names) -> bool | None:
        return _offers_value(answer, opts, asked)
