"""`tova` eviction (TOVA, Oren et al. 2024, "Transformers are Multi-State RNNs"): keep the
tokens the prompt's last query attends to most, averaged over all heads of the layer,
so every KV head keeps the same tokens. The last token itself is always kept."""

from __future__ import annotations

from typing import ClassVar

import torch

from evalrun.runners.accel.evict._policy import EvictionPolicy, ScoreInput


class Tova(EvictionPolicy):
    name: ClassVar[str] = "tova"

    def score(self, inp: ScoreInput) -> torch.Tensor:
        batch, kv_heads, n, _ = inp.keys.shape
        last = inp.window_attention(1)[:, :, -1, :]  # [batch, q heads, n]: the last query's attention
        scores = last.mean(dim=1, keepdim=True).expand(batch, kv_heads, n).clone()
        scores[..., -1] = float("inf")
        return scores
