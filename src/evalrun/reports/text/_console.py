"""The console every command prints with: rich, made safe for untrusted text."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.text import Text

from evalrun.reports.text._safe_text import safe_text

__all__ = ["SafeConsole"]


class SafeConsole(Console):
    """A rich console for untrusted text. Every string it prints (a line, a table cell, a title)
    goes through `render_str`, where it is neutralised (reports.text) before its markup is
    parsed, so ESC, controls, bidi overrides and lone surrogates from data never reach the
    terminal; rich adds its own styles after. Emoji codes stay text (`:x:` in an answer is not
    an emoji). A reader that closes the pipe (`evalrun report ... | head`) silences the console
    instead of ending the command: rich's default exits 1 there, before any report file is
    written."""

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
