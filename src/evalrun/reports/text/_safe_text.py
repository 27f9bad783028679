"""Text from data, models and stored runs made safe to show: each character that would act instead of
showing (ESC, controls, bidi formatting, lone surrogates) becomes one visible one (docs/commands.md,
'Untrusted text'); newline and tab are kept, they are structural.

Every replacement is one BMP character for one code point, so offsets measured on the original text (the
item browser's highlights and diffs) still hold, in code points and UTF-16 units alike; none is markup in
any output (no `<`, `&`, `[`, `|` or backslash), so it may run over a whole rendered document too.
"""

from __future__ import annotations

import re
from typing import Any

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
