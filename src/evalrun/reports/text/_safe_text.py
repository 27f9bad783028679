"""Text from data, models and stored runs made safe to show (docs/commands.md, 'Untrusted text'); the console
every command prints with; where a report file may go (checked before any work; written with evals.files'
one atomic writer).

Every replacement is one BMP character for one code point, so offsets measured on the original text (the
item browser's highlights and diffs) still hold, in code points and UTF-16 units alike; none is markup in
any output (no `<`, `&`, `[`, `|` or backslash), so it may run over a whole rendered document too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

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
    return [safe_tree(v) for v in value] if isinstance(value, (list, tuple)) else value


class SafeConsole(Console):
    """A rich console for untrusted text: every string is neutralised in `render_str`, before its markup is
    parsed, and emoji codes stay text. A closed pipe (`evalrun report ... | head`) silences it instead of
    rich's exit 1, which would come before any report file is written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(safe_text(text), **kwargs)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:
            fd = self.file.fileno()
        except (AttributeError, OSError, ValueError):
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def output_problem(path: Path) -> str | None:
    """Why `path` cannot take a report, checked before any work is done; None when it can."""
    if path.is_dir():
        return "is a directory; give a file path"
    parent = path.parent
    probe = parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a directory, so the file cannot be created there"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    if path.exists() and not os.access(path, os.W_OK):
        return "exists and is not writable"
    return None
