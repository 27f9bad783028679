"""The options of `run` and `compare` that change the configs before they run: `--ray`, `--timing`, `--drift`.

A Click option takes a value or none, not either, but `--ray` alone (RAY_ADDRESS, or a local instance) is the common
case: a bare `--ray` is given the value `auto` before parsing when no address follows it."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Callable, Optional

import typer

from evalrun.evals.config import RunConfig, ray_variant

AUTO = "auto"  # RAY_ADDRESS when set, else the config's ray.address, else a local instance

ray_option: Optional[str] = typer.Option(
    None, "--ray", metavar="[ADDRESS]",
    help="Generate on Ray actors (executor: ray) for every hf config: `--ray` alone joins RAY_ADDRESS or "
         "starts a local instance; `--ray ray://HOST:10001` (or `--ray local`) names one. Same batches, "
         "same outputs, same run keys as in process. Needs `pip install 'evalrun[ray]'`.")


def _is_address(arg: str) -> bool:
    return not arg.startswith("-") and not arg.endswith((".yaml", ".yml")) and not Path(arg).exists()


def fill_bare_ray(argv: list[str]) -> list[str]:
    """argv with a bare `--ray` given the value `auto`."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg == "--ray" and (i + 1 >= len(argv) or not _is_address(argv[i + 1])):
            out.append(AUTO)
    return out


def apply_ray(configs: list[RunConfig], value: str | None, log: Callable[[str], None]) -> list[RunConfig]:
    """The configs as `--ray` runs them; those that stay in process are named with why."""
    if value is None:
        return configs
    out = []
    for config in configs:
        changed, why = ray_variant(config, None if value == AUTO else value)
        if why:
            log(f"{config.name}: --ray: stays in process ({why})")
        out.append(changed)
    return out


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


def apply_timing(candidates: list[RunConfig], mode: TimingMode | None) -> list[RunConfig]:
    """The candidate configs with `timing` set to `mode` (None: as each config says)."""
    return candidates if mode is None else [c.model_copy(update={"timing": mode.value}) for c in candidates]


drift_option = typer.Option(
    False, "--drift/--no-drift",
    help="Teacher-force each candidate (and the first replicate) on the baseline's answers and report per-token KL, "
         "same top-1 and delta-p beside the flips, when the baseline stored its distributions (`logprobs:`). An answer "
         "the candidate writes as the baseline's is read off its own generation; the others are read again (about "
         "their generation's cost). Off by default; stored records are reused.")
