"""Where a report file may go (checked before any work), and writing it with
the one atomic writer (evals.files)."""

from __future__ import annotations

import os
from pathlib import Path

from evalrun.evals.files import write_atomic

__all__ = ["output_problem", "write_atomic"]


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
