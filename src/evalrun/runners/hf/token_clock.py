"""When `generate` hands out each new token: time to first token, per-item decode time and inter-token gaps.

A transformers streamer: `put` comes once with the prompt, then once per decoding step. A timestamp per step
costs well under a microsecond against milliseconds per forward, so the clock stays on for every run
(benchmarks/timing_overhead.py measures it).
"""

from __future__ import annotations

import bisect
import time
from typing import Any, Callable

from transformers.generation.streamers import BaseStreamer


class TokenClock(BaseStreamer):
    """Timestamps of every decoding step after the prompt; with `sync` (torch.cuda.synchronize) each follows a
    synchronisation, so no step is read before the device finished it (the manifest's `speed.clock` says so).
    """

    def __init__(self, sync: Callable[[], None] | None = None):
        self._sync = sync
        self._prompt_seen = False
        self.times: list[float] = []  # perf_counter at each step after the prompt
        self.tokens: list[int] = []  # cumulative new tokens per sequence at each step

    def put(self, value: Any) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        if self._sync is not None:
            self._sync()
        self.times.append(time.perf_counter())
        step = int(value.shape[-1]) if value.dim() > 1 else 1
        self.tokens.append((self.tokens[-1] if self.tokens else 0) + step)

    def end(self) -> None:
        """Nothing to flush: the stamps are read after `generate` returns."""

    def first_token_at(self) -> float | None:
        """perf_counter when the first new token was out, None if none came."""
        return self.times[0] if self.times else None

    def _step_of(self, n: int) -> int:
        return min(bisect.bisect_left(self.tokens, n), len(self.times) - 1)

    def token_at(self, n: int) -> float | None:
        """perf_counter when a sequence had its first `n` new tokens (n >= 1)."""
        return None if n < 1 or not self.tokens else self.times[self._step_of(n)]

    def gaps(self, n: int) -> list[float]:
        """Seconds between the successive steps that gave a sequence its first `n` tokens (ITL)."""
        if n < 2 or not self.tokens:
            return []
        steps = self.times[: self._step_of(n) + 1]
        return [round(b - a, 6) for a, b in zip(steps, steps[1:])]


CLOCK_CPU = "time.perf_counter at each decoding step (a transformers streamer); CPU: no device synchronisation needed"
CLOCK_CUDA = ("time.perf_counter at each decoding step (a transformers streamer), each after "
              "torch.cuda.synchronize()")
