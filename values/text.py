"""Text as the scorer compares it, and the small pieces every parser shares.

Every function in `evalrun.values` is total: any string in, a value (or an empty
tuple) out, never an exception. Nothing is ever filled in from "today" or from
the gold value: the parsers see one string at a time.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Inputs longer than this are parsed without the lru_cache, so that one huge
# model answer cannot pin megabytes in memory.
CACHE_MAX_LEN = 4096


def prep(s: str) -> str:
    """NFKC (fullwidth digits, no-break spaces, fullwidth currency signs) only
    when the string is not plain ASCII, which keeps the common case cheap."""
    return s if s.isascii() else unicodedata.normalize("NFKC", s)


def _build_punct() -> str:
    """All BMP punctuation (Unicode category P*), built once at import."""
    return "".join(chr(i) for i in range(0x10000) if unicodedata.category(chr(i)).startswith("P"))


PUNCT = _build_punct()
EDGE_STRIP = PUNCT + "`~|^ \t\r\n\f\v\u00a0\u202f\u2009\u3000"
_PUNCT_TO_SPACE = {ord(c): " " for c in PUNCT}
_PUNCT_TO_SPACE.update({ord("'"): None, ord("\u2019"): None})  # don't -> dont

HAS_DIGIT = re.compile(r"\d")


@lru_cache(maxsize=65536)
def _norm_text_cached(s: str) -> str:
    return _norm_text(s)


def _norm_text(s: str) -> str:
    s = unicodedata.normalize("NFKC", s).casefold().translate(_PUNCT_TO_SPACE)
    return " ".join(s.split())


def norm_text(s: str) -> str:
    """NFKC, casefold, punctuation to space (apostrophes dropped), whitespace collapsed."""
    return _norm_text_cached(s) if len(s) <= CACHE_MAX_LEN else _norm_text(s)



def only_copies(answer: str, document: str, min_chars: int = 20) -> bool:
    """Is the answer nothing but lines copied from the document (whitespace aside)? A small
    model that cannot answer often repeats the document instead: such an answer states no
    value of its own, whatever digits the copied lines hold."""
    lines = [" ".join(line.split()) for line in answer.splitlines()]
    lines = [line for line in lines if line]
    if sum(map(len, lines)) < min_chars:
        return False
    flat = " ".join(document.split())
    return all(line in flat for line in lines)
