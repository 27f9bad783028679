"""Is this machine loaded? Timing checks ask before they fail.

A timing assertion is a claim about evalrun, not about the other jobs on the machine. On a
machine where more runnable work than cores competes (the 1-minute load average over the
cores this process may use), or where the checked work got markedly less CPU than the wall
clock it took, a missed time bound says nothing about evalrun: the check skips with its
figures. On a quiet machine a miss fails.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import pytest

STARVED = 0.7  # the timed work got under this share of one core: another tenant had the CPU


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def loaded() -> str | None:
    """Why timings cannot be trusted here now (a sentence with the figures), or None."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    n = cores()
    return f"load average {load:.1f} over {n} core{'s' * (n != 1)}" if load > n else None


@dataclass
class Timed:
    wall: float = 0.0  # seconds
    cpu: float = 0.0  # this process's CPU seconds over the same span (all threads)

    def starved(self) -> str | None:
        """The work ran on well under one core for its wall time: it waited for the CPU."""
        if self.wall > 0 and self.cpu < STARVED * self.wall:
            return f"the work got {self.cpu:.2f} s of CPU in {self.wall:.2f} s of wall time"
        return None


@contextmanager
def timed() -> Iterator[Timed]:
    t = Timed()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield t
    finally:
        t.wall, t.cpu = time.perf_counter() - wall, time.process_time() - cpu


def skip_if_loaded(what: str, figures: str = "") -> None:
    """Called where a timing check missed: skip with the figures when the machine is loaded."""
    why = loaded()
    if why:
        pytest.skip(f"{what} on a loaded machine ({why}){': ' + figures if figures else ''}")


def within(t: Timed, limit: float, what: str) -> None:
    """`what` took under `limit` seconds of wall time; a miss on a loaded machine (or while the
    work itself was starved of CPU) skips with the figures instead of failing."""
    if t.wall < limit:
        return
    figures = f"{t.wall:.2f} s wall, {t.cpu:.2f} s CPU, bound {limit:g} s"
    why = loaded() or t.starved()
    if why:
        pytest.skip(f"{what}: {figures}, on a loaded machine ({why})")
    raise AssertionError(f"{what}: {figures}")
