"""Writing a report file so that a reader never sees half of one: a temporary
file beside the target, flushed, then renamed over it; on any failure the
temporary file is removed and the target is left as it was."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, text: str) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


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
