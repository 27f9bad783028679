"""What the model was shown: the document (copied lines) and the question (its words name the field)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from evalrun.contract.types import CONTEXT_SEPARATOR
from evalrun.values.clauses import Names, singular
from evalrun.values.text import prep


class AnswerContext(NamedTuple):
    document: str
    question: str


def read_context(prompt: str | None) -> AnswerContext | None:
    """The prompt split into document and question; None without a prompt."""
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    head, sep, tail = prompt.rpartition(CONTEXT_SEPARATOR)
    if sep and head.strip() and tail.strip():
        return AnswerContext(head, tail)
    return AnswerContext(prompt, "")  # no split: which part is the question is not known


# Words of a question that do not say what is asked ("What is the ... ?").
_QUESTION_FILLER = frozenset("""
what which who whom whose when where why how many much is are was were be been being do does did can could will
would shall should must may might the a an this that these those it its of in on at to for from by with as and or
per please answer give state tell me us you your only exactly value figure document shown listed stated given
""".split())
_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
_PAREN = re.compile(r"\(([^()]{1,60})\)")
_FIRST = re.compile(r"^[^?]*\?|^[^.!?]*[.!]")


def _content(text: str) -> frozenset[str]:
    return frozenset(singular(w) for w in _WORD.findall(text.casefold())
                     if w not in _QUESTION_FILLER and not w.isdigit())


@lru_cache(maxsize=4096)
def asked_names(question: str | None) -> Names:
    """The names the question gives the field: the content words of its first sentence, and each parenthesised
    name in it ("(Rechnungsbetrag)"); empty when the question asks nothing readable."""
    if not question:
        return ()
    q = prep(question).strip()
    m = _FIRST.match(q)
    first = m[0] if m else q
    names = [_content(p) for p in _PAREN.findall(first)]
    names.insert(0, _content(_PAREN.sub(" ", first)))
    return tuple(n for n in names if n and len(n) <= 8)


_ECHO_TOKEN = re.compile(r"(?<![\w.,'/-])(?:[0-9](?:[0-9.,']*[0-9])?)(?![\w'/-]|[.,][0-9])")
_ANSWER_FILLER = frozenset("""
the a an is are was were it its this that of in on for to be answer question document text
""".split())


_CODE = re.compile(r"(?<![\w'/-])[A-Z][A-Z]{1,9}(?![\w'/-])(?![\s:#.-]*[0-9])")


@lru_cache(maxsize=4096)
def echoed_tokens(question: str | None) -> frozenset[str]:
    """The question's numbers and codes (repeating them gives no value); a code before a number stays ("PO 77412")."""
    if not question:
        return frozenset()
    q = prep(question)
    return frozenset(m[0] for m in _ECHO_TOKEN.finditer(q)) | frozenset(m[0] for m in _CODE.finditer(q))


def mask_echo(answer: str, question: str | None) -> str:
    """The answer with the question's numbers and codes blanked where repeated (same length: spans line up)."""
    echoed = echoed_tokens(question)
    if not echoed:
        return answer
    blank = lambda m: " " * len(m[0]) if m[0] in echoed else m[0]  # noqa: E731
    return _CODE.sub(blank, _ECHO_TOKEN.sub(blank, answer))


_QUOTED_VALUE = re.compile(r"[\"“«][^\"”»]{1,80}[\"”»]")


def only_echo(answer: str, question: str | None) -> bool:
    """Does the answer hold only the question's own words? A restated question gives no value."""
    if not question or _QUOTED_VALUE.search(answer):
        return False  # 'The reference is "This Agreement"' offers the quoted words as the value
    words = [w for w in _WORD.findall(prep(answer).casefold())]
    if not words:
        return False
    asked = set(_WORD.findall(prep(question).casefold())) | _ANSWER_FILLER
    return all(w in asked for w in words)
