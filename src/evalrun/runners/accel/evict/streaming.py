"""`streaming` eviction (StreamingLLM): keep the first `sinks` tokens (attention sinks) and the most recent ones."""

from __future__ import annotations

from typing import ClassVar

import torch

from evalrun.runners.accel.evict._policy import EvictionPolicy, EvictSettings, ScoreInput


class Streaming(EvictionPolicy):
    name: ClassVar[str] = "streaming"
    settings_keys: ClassVar[tuple[str, ...]] = ("sinks",)

    @classmethod
    def check(cls, settings: EvictSettings) -> None:
        if settings.budget is not None and settings.budget <= settings.sinks:
            raise ValueError(f"budget {settings.budget} leaves no recent tokens beside {settings.sinks} sinks")

    def score(self, inp: ScoreInput) -> torch.Tensor:
        """Later tokens score higher; the sinks (at most keep - 1 of them, leaving room for the newest) score
        highest of all."""
        batch, heads, n, _ = inp.keys.shape
        sinks = min(inp.settings.sinks, inp.keep - 1) if inp.keep > 1 else 0
        scores = torch.arange(n, dtype=torch.float32, device=inp.keys.device)
        scores[:sinks] = float("inf")
        return scores.expand(batch, heads, n)
