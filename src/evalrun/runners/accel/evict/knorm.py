"""`knorm` eviction: keep the keys with the smallest L2 norm, a query-free score (kvpress's KnormPress)."""

from __future__ import annotations

from typing import ClassVar

import torch

from evalrun.runners.accel.evict._policy import EvictionPolicy, ScoreInput


class Knorm(EvictionPolicy):
    name: ClassVar[str] = "knorm"

    def score(self, inp: ScoreInput) -> torch.Tensor:
        return -inp.keys.float().norm(dim=-1)
