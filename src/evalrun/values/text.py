"""Text as the scorer compares it, and the pieces every (total, one-string-at-a-time) parser shares."""

from __future__ import annotations

import json
import re
import unicodedata
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

# Inputs longer than this are parsed without the lru_cache, so that one huge
# model answer cannot pin megabytes in memory.
CACHE_MAX_LEN = 4096


def _build_digits() -> dict[int, str | None]:
    """Every BMP decimal digit as ASCII, the Arabic separators and percent sign as ". , %", bidi marks dropped."""
    table: dict[int, str | None] = {
        i: str(unicodedata.decimal(chr(i))) for i in range(0x80, 0x10000)
        if unicodedata.category(chr(i)) == "Nd"
    }
    table.update({0x066B: ".", 0x066C: ",", 0x066A: "%"})
    table.update({c: None for c in (0x200E, 0x200F, 0x061C, 0x2066, 0x2067, 0x2068, 0x2069)})
    return table


_DIGITS = _build_digits()


def prep(s: str) -> str:
    """NFKC and every script's digits as ASCII, only for a string that is not plain ASCII (the cheap common case)."""
    return s if s.isascii() else unicodedata.normalize("NFKC", s).translate(_DIGITS)


# all BMP punctuation (Unicode category P*), built once at import
PUNCT = "".join(chr(i) for i in range(0x10000) if unicodedata.category(chr(i)).startswith("P"))
EDGE_STRIP = PUNCT + "`~|^ \t\r\n\f\v\u00a0\u202f\u2009\u3000"
_PUNCT_TO_SPACE: dict[int, str | None] = {ord(c): " " for c in PUNCT}
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



_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+|\n+")
_TERMINAL = ".!?。)\"'”»"


def drop_cut_repeat(answer: str) -> str:
    """The answer without a last fragment cut off while repeating an earlier sentence ("... is USD 38,750.00.
    The stated value is USD 38,7"): a model out of tokens mid-repeat states no new value."""
    stripped = answer.rstrip()
    if not stripped or stripped[-1] in _TERMINAL or len(stripped) > 20000:
        return answer
    parts = [p for p in _SENTENCE_END.split(stripped) if p.strip()]
    if len(parts) < 2:
        return answer
    last = " ".join(parts[-1].split())
    if any(" ".join(p.split()).startswith(last) and len(" ".join(p.split())) > len(last) for p in parts[:-1]):
        return stripped[: stripped.rfind(parts[-1])].rstrip()
    return answer


_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def mostly_copied(answer: str, document: str, share: float = 0.75, min_words: int = 6, n: int = 3) -> bool:
    """Is (nearly) all of the answer runs of `n` document words in the document's order? Repeated input is told
    from an answer in its own frame that reuses the document's words; a word cut mid-way at the end is left out."""
    words = _words(answer)
    if answer.rstrip()[-1:] not in _TERMINAL and len(words) > 1:
        words = words[:-1]
    if len(words) < max(min_words, n):
        return False
    doc = _words(document)
    runs = {tuple(doc[i:i + n]) for i in range(len(doc) - n + 1)}
    copied = [False] * len(words)
    for i in range(len(words) - n + 1):
        if tuple(words[i:i + n]) in runs:
            copied[i:i + n] = [True] * n
    return sum(copied) >= share * len(words)


def only_copies(answer: str, document: str, min_chars: int = 20) -> bool:
    """Is the answer nothing but lines copied from the document? A model that cannot answer often repeats the
    document: that states no value, whatever digits the lines hold."""
    lines = [" ".join(line.split()) for line in answer.splitlines()]
    lines = [line for line in lines if line]
    if sum(map(len, lines)) < min_chars:
        return False
    flat = " ".join(document.split())
    return all(line in flat for line in lines)


IDEOGRAPH = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def word_count(s: str) -> int:
    """Words of `s`, an ideograph or kana/hangul syllable counting as one (CJK text has no spaces)."""
    return sum(not IDEOGRAPH.search(w) for w in s.split()) + len(IDEOGRAPH.findall(s))


# the markers that mean "no value" (N/A, none, not found, ...)
ABSENT_MARKERS = frozenset(
    {
        "", "n/a", "na", "n.a", "none", "null", "nil", "unknown", "not found", "not available", "not applicable",
        "not provided", "not specified", "not stated", "not mentioned", "not given", "not present", "no value",
        # the same in the languages the refusal reader knows (values.denials)
        "k.a", "k. a", "keine angabe", "nicht angegeben", "unbekannt", "non indiqué", "non renseigné",
        "non précisé", "inconnu", "no se indica", "no consta", "sin datos", "desconocido", "não informado",
        "non indicato", "niet vermeld", "記載なし", "なし", "不明", "該当なし", "无", "未提供",
    }
)
# a typed answer that starts with one of these and has no digit is a refusal ("Not found in the document.")
_ABSENT_PREFIXES = tuple(
    m + " " for m in ("n/a", "none", "null", "unknown", "not found", "not available",
                      "not applicable", "not provided", "not specified", "not stated",
                      "not mentioned", "not given", "not present")
)


def is_absent(s: str, prefix_rule: bool = False) -> bool:
    """Empty markers mean absent; surrounding punctuation and case are ignored."""
    if len(s) > 300 or HAS_DIGIT.search(s):  # no marker holds a digit
        return False
    t = s.strip(EDGE_STRIP)
    if not t:
        return True
    t = " ".join(t.casefold().split())
    if t in ABSENT_MARKERS:
        return True
    return prefix_rule and t.startswith(_ABSENT_PREFIXES)


# a sign in words: "$1,284.50. The amount is negative ..." gives -1,284.50, as a reader takes it
_NEGATIVE = re.compile(
    r"(?i)\b(?:it|this|that|which|the (?:amount|balance|value|figure|sum|total|result|number))"
    r"\s+(?:is|was)\s+(?:a\s+)?negative\b"
)
_DENIED = re.compile(r"(?i)\b(?:is|was)\s+not\s+(?:a\s+)?negative\b|\b(?:isn[’']t|wasn[’']t)\s+(?:a\s+)?negative\b")


def says_negative(answer: str) -> bool:
    """Does the answer say, in words, that its value is negative?"""
    return _NEGATIVE.search(answer) is not None and _DENIED.search(answer) is None


def coerce(value: Any) -> tuple[str | None, str | None]:
    """A model's JSON value as (text or None if absent, note): "nonscalar" for an object or nested list (never a
    value); singleton lists unwrapped, longer ones joined with "; " (several values are ambiguous); empty absent."""
    for _ in range(256):
        if isinstance(value, (list, tuple)) and len(value) == 1:
            value = value[0]
        else:
            break
    if value is None:
        return None, None
    if isinstance(value, str):
        return value, None
    if isinstance(value, bool):
        return ("true" if value else "false"), None
    if isinstance(value, int):
        try:
            return str(value), None
        except ValueError:  # more digits than int->str allows
            return format(Decimal(value), "f"), None
    if isinstance(value, (float, Decimal)):
        try:
            d = Decimal(repr(value)) if isinstance(value, float) else value
            return (format(d, "f") if d.is_finite() else str(value)), None
        except (InvalidOperation, ValueError):
            return str(value), None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace"), None
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)[:100]
        if not items:
            return None, None
        if all(v is None or isinstance(v, (str, int, float, Decimal)) for v in items):
            parts = [p for p in (coerce(v)[0] for v in items) if p is not None]
            return ("; ".join(parts) if parts else None), None
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if not value:
            return None, None
        try:
            return json.dumps(value, ensure_ascii=False, default=str)[:2000], "nonscalar"
        except Exception:  # noqa: BLE001 - unprintable keys/values, sets
            return str(type(value).__name__), "nonscalar"
    try:
        return str(value), None
    except Exception:  # noqa: BLE001
        return "<unprintable>", None
