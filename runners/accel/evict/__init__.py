"""KV-cache eviction: the policy base and the evicting cache, and one policy per module (found by name, as the
acceleration methods are)."""

from __future__ import annotations

from evalrun.runners.accel.evict._cache import EvictingCache
from evalrun.runners.accel.evict._policy import EvictSettings, Evictor, ScoreInput, policies, window_attention

__all__ = [
    "EvictSettings", "EvictingCache", "Evictor", "ScoreInput", "policies", "window_attention",
]
