"""Speed as stored runs record it: each run's summary, the speed-accuracy table and capacity, interleaved timing
and how long a run should take."""

from __future__ import annotations

from evalrun.evals.speed._speed import kv_cache_figures, longest_context, run_speed, run_timing
from evalrun.evals.speed.capacity import CapacityInputs
from evalrun.evals.speed._table import (
    EMULATED_NOTE, NOT_COMPARABLE_NOTE, SPEED_ONLY, SpeedRow, SpeedTable, effects_facts, method_label, speed_table,
)
from evalrun.evals.speed._served import ServerTimings, engine_label, flag_changes
from evalrun.evals.speed._estimate import Estimate, estimate, measure, reference_model
from evalrun.evals.speed.interleave import interleaved_of, sample_batches

__all__ = ["CapacityInputs", "EMULATED_NOTE", "Estimate", "NOT_COMPARABLE_NOTE", "SPEED_ONLY", "ServerTimings",
           "SpeedRow", "SpeedTable", "effects_facts", "engine_label", "estimate", "flag_changes", "interleaved_of",
           "kv_cache_figures", "longest_context", "measure", "method_label", "reference_model", "run_speed",
           "run_timing", "sample_batches", "speed_table"]
