"""When `generate` hands out each new token, for time to first token and per-item decode time.

A transformers streamer: `generate` calls `put` once with the prompt, then once
per decoding step with that step's tokens (one per sequence; several at once in
assisted generation). Recording a timestamp per step costs well under a
microsecond, against milliseconds per model forward, so the clock can stay on
for every run (benchmarks/timing_overhead.py measures it).
"""

from __future__ import annotations

import bisect
import time
from typing import Any, Callable

from transformers.generation.streamers import BaseStreamer


class TokenClock(BaseStreamer):
    """Timestamps of every decoding step after the prompt.

    `sync` (torch.cuda.synchronize on CUDA) runs once, at the first token, so
    time to first token is not read before the device finished the prefill;
    later steps are already synchronised by generate's own host copies.
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
        if not self.times and self._sync is not None:
            self._sync()
        self.times.append(time.perf_counter())
        step = int(value.shape[-1]) if value.dim() > 1 else 1
        self.tokens.append((self.tokens[-1] if self.tokens else 0) + step)

    def end(self) -> None:
        """Nothing to flush: the stamps are read after `generate` returns."""

    def first_token_at(self) -> float | None:
        """perf_counter when the first new token was out, None if none came."""
        return self.times[0] if self.times else None

    def token_at(self, n: int) -> float | None:
        """perf_counter when a sequence had its first `n` new tokens (n >= 1)."""
        if n < 1 or not self.tokens:
            return None
        return self.times[min(bisect.bisect_left(self.tokens, n), len(self.times) - 1)]
