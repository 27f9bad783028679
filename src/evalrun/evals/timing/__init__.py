"""Per-request timing: latency and throughput, service-level objectives, paired speedups and how busy the
machine was while a run was timed."""

from __future__ import annotations

from evalrun.evals.timing.latency import (
    BOOTSTRAP_RESAMPLES, METRICS, PERCENTILES, SLO, ConfiguredSLO, SLOError, Speedup, pair_timings, parse_metric,
    parse_slo, pkey, request_metrics, slo_from_mapping, speedup,
)
from evalrun.evals.timing.load import RunLoad, Snapshot, measured, run_load, timings_warning

__all__ = ["BOOTSTRAP_RESAMPLES", "ConfiguredSLO", "METRICS", "PERCENTILES", "RunLoad", "SLO", "SLOError", "Snapshot",
           "Speedup", "measured", "pair_timings", "parse_metric", "parse_slo", "pkey", "request_metrics", "run_load",
           "slo_from_mapping", "speedup", "timings_warning"]
