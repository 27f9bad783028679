"""`--timing` on `compare`: how every candidate's speedups are timed, overriding its config's `timing:`."""

from __future__ import annotations

from enum import Enum
from typing import Optional

import typer

from evalrun.evals.config import RunConfig


class TimingMode(str, Enum):
    auto = "auto"
    sequential = "sequential"
    interleaved = "interleaved"


timing_option: Optional[TimingMode] = typer.Option(
    None, "--timing",
    help="How candidates' speedups are timed (overrides each config's `timing:`): interleaved re-times a sample of "
         "batches of the baseline and the candidate side by side, so the machine's load cancels (both models in "
         "memory; on the demo it costs about as much again as the candidates' runs); sequential uses each run's "
         "own timings, with a warning when the load measured during the runs says they follow it; auto "
         "(the default) is interleaved when the gate has speed rules, else sequential.")


def apply_timing(candidates: list[RunConfig], mode: TimingMode | str | None) -> list[RunConfig]:
    """The candidate configs with `timing` set to `mode` (None: as each config says)."""
    if mode is None:
        return candidates
    value = mode.value if isinstance(mode, TimingMode) else mode
    return [c.model_copy(update={"timing": value}) for c in candidates]


drift_option = typer.Option(
    False, "--drift/--no-drift",
    help="Teacher-force each candidate (and the first replicate) on the baseline's answers and report per-token KL, "
         "same top-1 and delta-p beside the flips, when the baseline stored its distributions (`logprobs:`). An answer "
         "the candidate writes as the baseline's is read off its own generation; the others are read again (about "
         "their generation's cost). Off by default; stored records are reused.")
