"""Batches generated on Ray actors: the executor, its workers and the runner that drives them (`runner`, by name:
it loads the hf runner)."""

from __future__ import annotations

from evalrun.runners.ray.executor import EngineSpec, RaySettings, RayUnavailable, cluster_device

__all__ = ["EngineSpec", "RaySettings", "RayUnavailable", "cluster_device"]
