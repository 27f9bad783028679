"""KV-cache eviction: the policy base, and one policy per module (found by name, as the acceleration methods
are). The evicting cache (`_cache`) is imported where a run makes one: it subclasses transformers' Cache,
whose module loads hqq and torch's compiler, and a config is validated without either."""

from __future__ import annotations

from evalrun.runners.accel.evict._policy import EvictSettings, Evictor, ScoreInput, policies, window_attention

__all__ = ["EvictSettings", "Evictor", "ScoreInput", "policies", "window_attention"]
