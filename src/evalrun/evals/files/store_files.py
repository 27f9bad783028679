"""Opening the files of a run directory never through a symbolic link, and naming the file of a failed write.

A run directory often lives where others can write (a restored CI cache, a shared runs/), and a link planted there would
make evalrun truncate, append to or read a file outside the store. So the directory and each file are opened with
O_NOFOLLOW, relative to the directory's descriptor (docs/run-store.md, 'Integrity'); runs/ itself may be a link."""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Iterator

import evalrun.evals.files._atomic as atomic
from evalrun.evals.files._atomic import _CLOEXEC, _NOFOLLOW
from evalrun.contract.errors import RuntimeFailure
from evalrun.evals.files._errors import ConfigError

_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# what open(2) says for O_NOFOLLOW on a link: ELOOP on Linux and macOS, EMLINK on FreeBSD
_LINK_ERRNOS = {errno.ELOOP, errno.EMLINK}


class StoreLink(ConfigError):
    """A symbolic link where the run store keeps a directory or a file (exit 2, naming it)."""

    def __init__(self, path: str | Path):
        super().__init__("is a symbolic link: the run store never follows a link inside a run directory (it would "
                         "read or write outside the store); remove the link, or give the directory it points to",
                         file=path)


class StoreWriteFailed(RuntimeFailure, OSError):
    """Writing a file of the run store failed (ENOSPC, EROFS, EIO...); what was stored before it stays stored."""

    def __init__(self, path: str | Path, cause: OSError):
        super().__init__(cause.errno, cause.strerror or str(cause))
        self.path = Path(path)

    def __str__(self) -> str:
        return self.text("everything stored before it is kept")

    def text(self, kept: str) -> str:
        return (f"{self.path}: cannot write: {self.strerror}; {kept}: free space (or fix the cause) and run the "
                "same command again, it resumes")


def open_dir(run_dir: Path) -> int:
    """A descriptor of the run directory itself, refusing a link (StoreLink)."""
    try:
        return os.open(run_dir, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS or (exc.errno == errno.ENOTDIR and run_dir.is_symlink()):
            raise StoreLink(run_dir) from None
        raise


def check_dir(run_dir: Path) -> None:
    """Refuse a run directory that is a link (StoreLink); a missing one is fine (it is made later)."""
    with suppress(FileNotFoundError):
        os.close(open_dir(run_dir))


def make_dir(run_dir: Path) -> None:
    """The run directory, made if missing; a link there is refused before mkdir could follow it."""
    check_dir(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)


def open_fd(path: Path, flags: int, mode: int = 0o644) -> int:
    """A descriptor of `path` (a file directly inside a run directory), never through a link
    (StoreLink); the caller closes it. Other OSErrors are the caller's (FileNotFoundError...)."""
    dfd = open_dir(path.parent)
    try:  # O_NONBLOCK: a FIFO planted there is not waited on (no effect on a regular file)
        fd = os.open(path.name, flags | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0), mode, dir_fd=dfd)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS:
            raise StoreLink(path) from None
        raise
    finally:
        os.close(dfd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError("is not a regular file (a FIFO, a device or a directory where the run store keeps a file)",
                          file=path)
    return fd


@contextmanager
def opened(path: Path, flags: int, mode: int = 0o644) -> Iterator[int]:
    """`open_fd`, closed on leaving."""
    fd = open_fd(path, flags, mode)
    try:
        yield fd
    finally:
        os.close(fd)


def read_bytes(path: Path) -> bytes | None:
    """None when the file (or its run directory) does not exist."""
    try:
        with opened(path, os.O_RDONLY) as fd, open(fd, "rb", closefd=False) as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def size(path: Path) -> int | None:
    """The file's size in bytes (of a link itself, which no open here follows); None when missing."""
    try:
        return os.lstat(path).st_size
    except FileNotFoundError:
        return None


def exists(path: Path) -> bool:
    """Whether there is anything at `path`, a link included (which the next open refuses)."""
    return os.path.lexists(path)


@contextmanager
def _writing(path: Path) -> Iterator[None]:
    """A write to `path` that fails is a StoreWriteFailed naming it (a StoreLink is no OSError: it passes)."""
    try:
        yield
    except OSError as exc:
        raise StoreWriteFailed(path, exc) from None


def _write_all(fd: int, data: bytes, offset: int | None = None) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view) if offset is None else os.pwrite(fd, view, offset)
        if offset is not None:
            offset += n
        view = view[n:]


def append(path: Path, data: bytes, sync: bool) -> None:
    """Append `data` after the last byte; when the file does not end in a newline, start on a fresh
    line first, so the bytes already there stay as they are (their own line). A write that fails
    (a full disk) is cut back off, so the file keeps only whole lines."""
    make_dir(path.parent)
    with _writing(path), opened(path, os.O_RDWR | os.O_APPEND | os.O_CREAT) as fd:
        size = os.fstat(fd).st_size
        prefix = b"" if not size or os.pread(fd, 1, size - 1) == b"\n" else b"\n"
        try:
            _write_all(fd, prefix + data)
            if sync:
                os.fsync(fd)
        except OSError:
            with suppress(OSError):  # shrinking needs no space; if even this fails, the reader skips the torn tail
                os.ftruncate(fd, size)
            raise


def create_new(path: Path, data: bytes) -> bool:
    """Write a new file (never replacing anything, a link included); False when `path` is taken."""
    with _writing(path):
        try:
            with opened(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL) as fd:
                _write_all(fd, data)
                os.fsync(fd)
        except FileExistsError:
            return False
    return True


def truncate(path: Path, size: int, expected: int) -> bool:
    """Cut `path` to `size` bytes if it still has `expected` bytes (False, untouched, otherwise)."""
    with _writing(path), opened(path, os.O_RDWR) as fd:
        if os.fstat(fd).st_size != expected:
            return False
        os.ftruncate(fd, size)
        os.fsync(fd)
    return True


def replace(path: Path, data: bytes) -> None:
    """Replace a whole file atomically (evals.files), refusing a run directory or a file there that is a link."""
    check_dir(path.parent)
    try:
        atomic.write_atomic(path, data, follow_links=False)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS:
            raise StoreLink(exc.filename or path) from None
        raise StoreWriteFailed(path, exc) from None


def overwrite_in_place(path: Path, data: bytes) -> None:
    """Rewrite an existing file in its own blocks, for when replacing it cannot get new ones (a full
    disk): `data` must be no longer than the file. Not atomic: a kill in the middle leaves a file a
    reader refuses as unreadable (and `execute` keeps aside), never another run's data."""
    with _writing(path), opened(path, os.O_RDWR) as fd:
        if len(data) > os.fstat(fd).st_size:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        _write_all(fd, data, offset=0)
        os.ftruncate(fd, len(data))
        os.fsync(fd)


def check_out(out: Path) -> None:
    """The run store folder (--out), checked before anything is built or generated (`check` too): a folder evalrun
    can write, or a path it can make one at. It may be a link (to a bigger disk); the run directories may not."""
    if os.path.lexists(out) and not out.exists():
        raise ConfigError("the run store folder (--out) is a link to nothing; give a folder", file=out)
    existing = out
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    where = "" if existing == out else f" (it would be made in {existing})"
    if not existing.is_dir():
        raise ConfigError(f"the run store folder (--out) cannot be a file{where}: give a folder, or a path to make "
                          "one at", file=out)
    if not os.access(existing, os.W_OK | os.X_OK):
        why = "a read-only file system" if _read_only(existing) else "no permission to write there"
        raise ConfigError(f"the run store folder (--out) is not writable{where}: {why}; give a folder evalrun can "
                          "write runs to", file=out)


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False
