"""`snapkv` eviction (SnapKV): score prompt tokens by the attention an observation window
(the prompt's last `window` tokens) pays them, pooled over `kernel` neighbours, per KV head."""

from __future__ import annotations

from typing import ClassVar

import torch

from evalrun.runners.accel.evict._policy import EvictionPolicy, ScoreInput


class SnapKV(EvictionPolicy):
    name: ClassVar[str] = "snapkv"
    settings_keys: ClassVar[tuple[str, ...]] = ("window", "kernel")

    def score(self, inp: ScoreInput) -> torch.Tensor:
        return snapkv_scores(inp.window_attention(inp.settings.window), inp.keys.shape[1], inp.settings.kernel)


def snapkv_scores(attn: torch.Tensor, kv_heads: int, kernel: int) -> torch.Tensor:
    """[batch, kv heads, n] from the window's attention [batch, q heads, w, n]: the window's mean,
    average-pooled over `kernel` tokens, averaged over the query heads of each KV head."""
    batch, q_heads, w, n = attn.shape
    scores = attn.mean(dim=-2)  # [batch, q heads, n]
    scores = torch.nn.functional.avg_pool1d(scores, kernel, stride=1, padding=kernel // 2, count_include_pad=False)
    scores = scores.view(batch, kv_heads, q_heads // kv_heads, n).mean(dim=2)
    scores[..., n - w:] = float("inf")  # the observation window itself is always kept
    return scores
