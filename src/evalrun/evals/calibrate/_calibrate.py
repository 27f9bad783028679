"""`evalrun calibrate` as a function: the repeats generated (or reused) as the config's run and its replicates,
measured, and the profile stored with the first run, where `compare` finds it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evalrun.evals.config import OpenAIRunConfig, RunConfig
from evalrun.evals.files import ConfigError
from evalrun.evals.gate import GateConfig, check_gate
from evalrun.evals.results import RunResult, served
from evalrun.evals.run import Progress, RunFailed, execute_run, prepare_checked
from evalrun.evals.scoring import score_run
from evalrun.evals.calibrate._measure import measure
from evalrun.evals.calibrate._profile import NoiseProfile, save_profile


@dataclass(frozen=True)
class Calibration:
    """What `evalrun calibrate` measured, where it stored it, and the repeats it measured it on."""

    profile: NoiseProfile
    path: Path
    runs: list[RunResult]


def _noise_source(config: RunConfig) -> str:
    if isinstance(config, OpenAIRunConfig):
        return ("its launched engine restarted for each repeat" if config.server is not None
                else "its named server asked again for each repeat")
    return "the hf runner in other (shuffled) batches for each repeat"


def calibrate(config: RunConfig, repeats: int, out: str | Path = "runs", limit: int | None = None,
              progress_factory: Callable[[], Progress | None] | None = None, log: Callable[[str], None] = print,
              gate: GateConfig | None = None, plants: int = 3, keep_servers: bool = False) -> Calibration:
    """Generate (or reuse) `repeats` runs of one config the way its noise arises, gate every pair of them as an
    A/A comparison with and without the others as replicates, plant harmful flips to measure the power, and
    store the profile with the first run (docs/gate.md, 'Calibration'). The runs are the config's run and its
    replicates `-r1`, `-r2`, ...: ordinary stored runs, resumable, and the ones `compare` gates with."""
    if repeats < 3:
        raise ConfigError(f"a noise profile needs at least 3 repeats (each pair is gated with the others as "
                          f"replicates), got {repeats}", path="--repeats")
    if config.instrument is not None:
        raise ConfigError("a measuring instrument plants faults: its noise is not the engine's; calibrate the config "
                          "without `instrument`", file=config.source, path="instrument")
    chosen = gate or config.gate or GateConfig()
    plan = [prepare_checked(config, out, limit, j) for j in range(repeats)]
    for p in plan[1:]:
        p.role = "replicate"
    items = plan[0].items
    check_gate(chosen, {it.pack for it in items}, {f.name for it in items for f in it.fields},
               {it.meta.shape for it in items if it.meta.shape}, items)
    served.before_runs(plan, keep_servers, log)
    runs = [execute_run(p, progress_factory() if progress_factory else None, log, False) for p in plan]
    if stopped := [r.dir.name for r in runs if r.manifest.status != "complete"]:
        raise RunFailed(f"{config.name}: repeats not complete ({', '.join(stopped)}); run calibrate again to resume")
    profile = measure(runs, [score_run(r.items, r.generations) for r in runs], chosen, _noise_source(config),
                      plants, log)
    return Calibration(profile, save_profile(runs[0].dir, profile), runs)
