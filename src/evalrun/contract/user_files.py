"""Reading a file the user names: only a regular file, and no more than a bound (docs/configs.md).

Opened non-blocking (a FIFO returns at once) and judged by fstat on that same descriptor, so what is read is what was
checked; reading stops one byte past the bound, so a growing file is refused too."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from evalrun.contract.errors import UsageError

MAX_YAML_BYTES = 1 << 20  # a config or gate file: a few kilobytes in practice
MAX_DATA_BYTES = 256 << 20  # a pack's JSONL/JSON/CSV/Parquet data, held in memory while items are built
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class FileRefused(UsageError, ValueError):
    """Why a file is not read, worded to follow its name ("is a FIFO, not a regular file")."""


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at `path` (links followed), at most `limit` of them; FileRefused
    otherwise. A missing file is FileNotFoundError, other OS errors are the caller's."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "a special file")
            raise FileRefused(f"is {kind}, not a regular file")
        if st.st_size > limit:
            raise FileRefused(f"is {st.st_size:,} bytes, over the {limit:,} bytes such a file may be")
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(limit + 1 - got, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise FileRefused(f"grew past the {limit:,} bytes such a file may be while it was read")
        return b"".join(chunks)
    finally:
        os.close(fd)
