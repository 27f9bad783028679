"""One writer per run directory: an OS lock (flock) on `<run>/lock`, held for the whole execute.

A second process waits for the first and then re-reads what is stored, so it
generates only what is still missing. The kernel drops a flock when its holder
dies (kill -9 included), so a lock left by a dead process is never stale: the
next run takes it at once. The file holds the holder's pid, only for messages.
It is opened like every file of the store (evals.files.store_files): a link planted
as `lock`, or a run directory that is a link, is refused before anything is
written through it.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Callable, Iterator

from evalrun.evals.files import store_files

if sys.platform != "win32":
    import fcntl
else:  # not POSIX: no OS lock; one writer per run is then up to the user
    fcntl = None

LOCK_NAME = "lock"


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        return "unknown"
    return text or "unknown"


def _same_file(fd: int, path: Path) -> bool:
    """False when the run directory was moved or removed while we waited (then lock afresh)."""
    try:
        st, here = os.lstat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)


@contextmanager
def run_lock(run_dir: Path, log: Callable[[str], None] = print, label: str = "") -> Iterator[bool]:
    """Hold the run's writer lock; yields whether this process had to wait for another."""
    store_files.make_dir(run_dir)
    path = run_dir / LOCK_NAME
    if fcntl is None:
        yield False
        return
    waited = False
    while True:
        fd = store_files.open_fd(path, os.O_RDWR | os.O_CREAT)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                prefix = f"{label}: " if label else ""
                log(f"{prefix}waiting for another process generating this run (pid {_holder(fd)}): {run_dir}")
                waited = True
                fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:  # interrupted while waiting
            os.close(fd)
            raise
        if _same_file(fd, path):
            break
        os.close(fd)
        store_files.make_dir(run_dir)
    try:
        with suppress(OSError):  # only for messages: a full disk is said by the store's next write, naming its file
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield waited
    finally:
        os.close(fd)  # closing the only descriptor releases the flock
