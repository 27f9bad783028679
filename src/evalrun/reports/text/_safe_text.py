"""Text from data, models and stored manifests made safe to show, for every renderer.

Item ids, golds, answers, field, pack and run names and error messages reach
the terminal, Markdown, JUnit XML, HTML and JSON. Some characters in them act
instead of showing: ESC starts a terminal escape sequence (colours, a rewritten
window title, a cleared line), C0 and C1 controls make XML not well-formed,
bidirectional overrides, embeddings, isolates and marks reorder what is
displayed around them (an answer that reads differently from what it is), and a
lone surrogate cannot be encoded at all, so writing it fails.

Each such character is replaced by one visible character, so a reader sees
that something was there and a value that differs from the gold only by an
invisible character no longer looks identical to it:

- a C0 control U+0000-U+001F becomes its Control Pictures symbol (ESC: ␛,
  SOH: ␁, CR: ␍) and DEL becomes ␡; newline and tab are kept, they are
  structural (single-line renderers collapse whitespace themselves);
- C1 controls U+0080-U+009F, the bidi formatting characters (U+061C,
  U+200E-U+200F, U+202A-U+202E, U+2066-U+2069), lone surrogates and the
  non-characters U+FFFE/U+FFFF become U+FFFD.

Every replacement is one BMP character for one code point, so lengths in
code points and in UTF-16 units stay the same: offsets computed on the original
text (the item browser's highlights and diffs) still point at the same places.
The replacements contain no character that is markup in any output (no `<`,
`&`, `[`, `|` or backslash), so the neutraliser may run on a whole rendered
document as well as on one value. Stored generations are never changed: this
is for showing only.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["UNSAFE", "safe_text", "safe_tree"]

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                    "\ud800-\udfff\ufffe\uffff]")
_DEL_PICTURE = "\u2421"
_REPLACEMENT = "\ufffd"


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    return _DEL_PICTURE if code == 0x7F else _REPLACEMENT


def safe_text(text: str) -> str:
    """`text` with every character that would act instead of showing replaced by a visible one."""
    return UNSAFE.sub(_visible, text) if UNSAFE.search(text) else text


def safe_tree(value: Any) -> Any:
    """A JSON-like value (dicts, lists, tuples, strings, numbers) with every string, keys included, made safe."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_tree(k): safe_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe_tree(v) for v in value]
    return value
