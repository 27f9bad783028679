"""How late does this machine let a thread run? A probe beside a timing check.

A child process (no share in the caller's GIL) waits 1 ms at a time with select(), whose
timeout has microsecond resolution, and records how far past each 1 ms it woke. Idle, the
p99 overshoot is a few tens of microseconds; with other jobs competing for the cores it is
milliseconds, and no timestamp taken in that window, by any runner, is better than that.

    with scheduling_noise() as noise:
        ...  # the timed work
    noise.p99  # seconds
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

_PROBE = """
import select, sys, time
late = []
while True:
    t = time.perf_counter()
    if select.select([sys.stdin], [], [], 0.001)[0]:
        break
    late.append(time.perf_counter() - t - 0.001)
late.sort()
print(late[int(0.99 * (len(late) - 1))] if late else 0.0, flush=True)
"""


@dataclass
class Noise:
    p99: float = 0.0  # seconds past the 1 ms wait, 99th percentile, filled at the end


@contextmanager
def scheduling_noise() -> Iterator[Noise]:
    noise = Noise()
    child = subprocess.Popen([sys.executable, "-c", _PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        yield noise
    finally:
        child.stdin.close()
        noise.p99 = float(child.stdout.readline() or 0.0)
        child.wait(10)
