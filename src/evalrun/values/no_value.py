"""Answers that give no value: a dropped field (`missing`), never a wrong value, nor correctly absent."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from evalrun.values.answer_context import AnswerContext
from evalrun.values.clauses import Names, subject, words
from evalrun.values.denials import mask_references
from evalrun.values.field_clauses import answer_clauses, about_field
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.text import (
    CACHE_MAX_LEN, HAS_DIGIT, IDEOGRAPH, drop_cut_repeat, mostly_copied, only_copies, prep, word_count,
)
from evalrun.values.types._base import FieldType, Options



def drop_cut_repeat_listed(answer: str) -> str:
    """values.text.drop_cut_repeat, list markers ignored ("1. 12 février 2024\n2. 12 fé" states no "12")."""
    masked = mask_list_markers(answer, outline=False)
    kept = drop_cut_repeat(masked)
    return answer if kept == masked else answer[: len(kept)]


def is_copied(answer: str, ctx: AnswerContext) -> bool:
    """Only prompt lines, or nearly all runs of document words; cached (many runs give one answer to one prompt)."""
    return _is_copied(answer, ctx) if len(answer) > CACHE_MAX_LEN else _is_copied_cached(answer, ctx)


def _is_copied(answer: str, ctx: AnswerContext) -> bool:
    prompt = f"{ctx.document}\n\n{ctx.question}" if ctx.question else ctx.document
    return only_copies(answer, prompt) or mostly_copied(answer, ctx.document)


_is_copied_cached = lru_cache(maxsize=8192)(_is_copied)


def _words(clause: str) -> int:
    """The clause's words of three letters or more; an ideograph counts as one (CJK babble is no short line)."""
    letters = [w for w in words(clause) if len(w) >= 3 and w.isalpha() and not IDEOGRAPH.search(w)]
    return len(letters) + len(IDEOGRAPH.findall(clause))


def offered(h: FieldType, answer: str, opts: Options, asked: Names) -> bool:
    """Does some clause give one of its values as an answer: a short label line, a bare value, or a clause about
    the field? A value inside a copied sentence about something else is not offered."""
    names = asked + opts.names
    for clause in answer_clauses(answer):
        if not h.candidates(clause, opts):
            continue
        # a short "label value" line ("Nettobetrag 2.510,45 €", "Net mass 388,40 kg"), or a clause about the field
        if _words(clause) <= 3 or (subject(clause, False).strip() and about_field(clause, names)):
            return True
    return False


def shows_any_value(text: str) -> bool:
    """Is there a value of any shape once list markers and references into the document are set aside?"""
    return bool(HAS_DIGIT.search(mask_references(mask_list_markers(prep(text)))))


def value_offered(answer: str, opts: Options, asked: Names) -> bool | None:
    """Is something given as the field's value, whatever its shape: a short answer, a bare value line, or a clause
    with a value that speaks of the field? None where nothing names the field (no question, no field name)."""
    known = {w for name in asked + opts.names for w in name if len(w) >= 3}
    if not known:
        return None
    if word_count(answer) <= 3:
        return bool(answer.strip())  # an answer of list markers only (blanked) offers nothing
    for clause in answer_clauses(answer):
        if not HAS_DIGIT.search(clause):
            continue
        if _short_line(clause) or _COPULA_VALUE.search(clause) or _value_after_name(clause, known):
            return True
    return False


def _short_line(clause: str) -> bool:
    """A bare value, or one word and a value ("1000,00 €", "Oconteiro 2023-01-01", "Cláusula
    1.ª - 186.450,00 €", "1200 x 2400 = 3200"); "Exporter: KO-EXP-2024-0117" labels another thing."""
    n = _words(clause)
    return n == 0 or (n == 1 and ":" not in clause)


# a value right after the verb, in the languages of the answers met: "The total amount of the
# invoice is 1,234.567", "La résultat est 1 500,00 €", "...は2024年5月22日" (the topic marker)
_COPULA_VALUE = re.compile(r"(?i)(?:\b(?:is|are|was|were|would be|est|ist|es|è|é|är|sind|sont|son)\s*:?\s+|は\s*)[-+\u2212(]?[$€£¥₹]?\s?\d")


_ASIDE_TEXT = re.compile(r"\([^()]*\)?")  # a parenthesised aside, or one cut off
_NEAR = 4  # tokens either side of the field's word within which its value is given ("starts on the 15th")


def _value_after_name(clause: str, known: set[str]) -> bool:
    """A value within a few words of a word of the question, not in an aside ("300 boxes of gloves" gives one;
    "the total includes tax (2024년 4월 30일)" does not)."""
    toks = _ASIDE_TEXT.sub(" ", clause).split()
    for i, tok in enumerate(toks):
        if known.isdisjoint(words(tok)):
            continue
        if any(HAS_DIGIT.search(t) for t in toks[max(0, i - _NEAR): i] + toks[i + 1: i + 1 + _NEAR]):
            return True
    return False
