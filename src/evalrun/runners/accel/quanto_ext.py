"""optimum-quanto as an optional extra: whether it is installed, and its compiled extension built
before the first item, said in the progress line, never waited on forever.

quanto compiles a C++ extension the first time a packed int2/int4 tensor is unpacked, into `build/` beside
its sources. torch guards that folder with a FileBaton: a `lock` file created with O_EXCL, removed when the
compile is done, that every other process polls for with no timeout; a killed compile leaves it behind and
every later quanto run hangs. So a lock no live process holds open is removed (with a message); one a live
process holds is waited on while that process lives.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from evalrun.runners.models import preparing

INSTALL = "pip install 'evalrun[quanto]'"
# the extension a device's unpacking uses (quanto registers the CUDA and Metal ones only where they can run)
_EXTENSION = {"cpu": "quanto_cpp", "cuda": "quanto_cuda", "mps": "quanto_mps"}
_ESTIMATE = {"cpu": "first use, about 2 min on 2 cores", "cuda": "first use, several minutes (nvcc)",
             "mps": "first use, about a minute"}
_WAIT_POLL = 1.0


def _stderr(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def installed() -> bool:
    """Whether optimum-quanto can be imported (it is an optional extra)."""
    try:
        return importlib.util.find_spec("optimum") is not None and importlib.util.find_spec("optimum.quanto") is not None
    except (ImportError, ValueError):
        return False


def missing(what: str) -> str:
    """The one-line reason a config asking for quanto cannot run here."""
    return f"{what} needs optimum-quanto (an optional extra, not installed): {INSTALL}"


def lock_holders(lock: Path) -> list[int]:
    """Ids of the live processes holding `lock` open (FileBaton keeps its descriptor open until release)."""
    import psutil

    target = os.path.realpath(lock)
    holders = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if any(os.path.realpath(f.path) == target for f in proc.open_files()):
                holders.append(proc.pid)
        except (psutil.Error, OSError):
            continue  # gone meanwhile, or not ours to inspect
    return holders


def clear_stale_lock(build_dir: Path, log: Callable[[str], None] = _stderr, poll: float = _WAIT_POLL) -> bool:
    """Make torch's FileBaton in `build_dir` passable: remove a lock no live process holds (True),
    wait while a live process holds it and remove it if that process dies holding it."""
    lock = build_dir / "lock"
    said = False
    while lock.exists():
        holders = lock_holders(lock)
        if not holders:
            try:
                lock.unlink()
            except FileNotFoundError:
                return False  # released meanwhile
            log(f"removed a stale lock left by an interrupted compile (no process holds it): {lock}")
            return True
        if not said:
            log(f"waiting for process {', '.join(map(str, holders))} compiling in {build_dir} (it holds {lock.name})")
            said = True
        time.sleep(poll)
    return False


def _extension(device: str) -> Any | None:
    from optimum.quanto.library.extensions import get_extension, is_extension_available

    name = _EXTENSION.get(device)
    return get_extension(name) if name and is_extension_available(name) else None


def _built(ext: Any) -> bool:
    import torch

    version = Path(ext.build_directory) / "pytorch_version.txt"
    try:
        return version.read_text(encoding="utf-8").strip() == torch.__version__
    except OSError:
        return False


def ensure_extension(device: str, log: Callable[[str], None] = _stderr) -> None:
    """Load (building it at first use) the quanto extension `device` unpacks with, before the first item."""
    ext = _extension(device.split(":")[0])
    if ext is None or ext._lib is not None:
        return
    build_dir = Path(ext.build_directory)
    build_dir.mkdir(parents=True, exist_ok=True)
    clear_stale_lock(build_dir, log)
    if _built(ext):
        ext.lib  # loads the built library (torch re-checks its sources under the same lock)
        return
    with preparing(f"compiling optimum-quanto's {device.split(':')[0].upper()} extension into {build_dir}",
                   _ESTIMATE.get(device.split(":")[0], "first use")):
        ext.lib


__all__ = ["INSTALL", "clear_stale_lock", "ensure_extension", "installed", "lock_holders", "missing"]
