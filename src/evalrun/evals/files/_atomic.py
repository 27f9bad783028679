"""Replacing a whole file so that a reader never sees half of one (a synced temporary file renamed over it): the one
atomic writer for manifests, scores and every report file. Relative to the folder's descriptor, so with
`follow_links=False` (the run store) a link as the folder or the target is OSError(ELOOP) before any byte is written."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def write_atomic(path: str | Path, data: str | bytes, follow_links: bool = True) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    dfd = os.open(out.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC |
                  (0 if follow_links else _NOFOLLOW))
    try:
        if not follow_links:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISLNK(os.stat(out.name, dir_fd=dfd, follow_symlinks=False).st_mode):
                    raise OSError(errno.ELOOP, "is a symbolic link", str(out))
        tmp, fd = _temporary(out.name, dfd)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, out.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)
    return out


def _temporary(name: str, dfd: int) -> tuple[str, int]:
    """A new file `.<name>.<random>.tmp`, never a link; the umask gives its mode (a report is as readable as any
    file)."""
    while True:
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=dfd)
        except FileExistsError:
            continue
