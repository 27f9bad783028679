"""Where output goes: the console every command prints with (rich, made safe for untrusted text), and
where a report file may go (checked before any work; written with evals.files' one atomic writer)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from evalrun.reports.text._safe_text import safe_text


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
