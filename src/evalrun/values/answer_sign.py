"""A sign in words: "$1,284.50. The amount is negative ..." gives -1,284.50, as a reader takes it."""

from __future__ import annotations

import re

_NEGATIVE = re.compile(
    r"(?i)\b(?:it|this|that|which|the (?:amount|balance|value|figure|sum|total|result|number))"
    r"\s+(?:is|was)\s+(?:a\s+)?negative\b"
)
_DENIED = re.compile(r"(?i)\b(?:is|was)\s+not\s+(?:a\s+)?negative\b|\b(?:isn[’']t|wasn[’']t)\s+(?:a\s+)?negative\b")


def says_negative(answer: str) -> bool:
    """Does the answer say, in words, that its value is negative?"""
    return _NEGATIVE.search(answer) is not None and _DENIED.search(answer) is None
