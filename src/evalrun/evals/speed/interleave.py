"""Interleaved timing: speed ratios that survive a machine whose load changes (docs/speed.md, 'Interleaved timing').

A sample of the run's own batches is re-timed with both runners loaded, the order alternating (A B, B A) so a
steady drift cancels. The window's load is stored with each re-timing: a busy one is not vouched for, and not reused."""

from __future__ import annotations

import time
from typing import Callable

from evalrun.contract.manifest import MachineLoad
from evalrun.contract.types import Generation, Item, Retiming
from evalrun.evals.config import HFRunConfig
from evalrun.evals.results import Interleaved, PreparedRun, RunResult
from evalrun.evals.timing import load as speed_load
from evalrun.runners.batch_plan import plan_batches


def sample_batches(items: list[Item], batch_size: int, batches: int,
                   tokens: Callable[[Item], int]) -> list[list[Item]]:
    """`batches` of the runner's planned batches, evenly spaced over the plan: the batches the run timed."""
    chunks = plan_batches(items, tokens, batch_size)
    if len(chunks) <= batches:
        return chunks
    step = len(chunks) / batches
    return [chunks[int(k * step)] for k in range(batches)]


def retime(base: PreparedRun, cand: PreparedRun, batches: int, log: Callable[[str], None] = print,
           on_pair: Callable[[int, int], None] | None = None) -> list[Retiming]:
    """Time the sampled batches on both runners and store the re-timings with the candidate."""
    # a served engine batches its own way: its items go in the sizes the hf runner's default (4) makes
    configured = cand.config.batch_size if isinstance(cand.config, HFRunConfig) else 4
    size = max(1, int(configured) if configured != "auto" else 1)
    chosen = sample_batches(cand.items, size, batches, cand.runner.prompt_tokens)
    log(f"{cand.label}: interleaved timing against {base.label}: {len(chosen)} batch pairs of {size}, "
        "both models loaded, the order alternating (A B, B A)")
    with base.runner.serving(), cand.runner.serving():  # launched servers: both up for every pair, then stopped
        records = _pairs(base, cand, chosen, log, on_pair)
    cand.store.append_interleaved(records)
    return records


def _pairs(base: PreparedRun, cand: PreparedRun, chosen: list[list[Item]], log: Callable[[str], None],
           on_pair: Callable[[int, int], None] | None) -> list[Retiming]:
    """Every record carries the machine's load over the whole window."""
    started, at_start = time.perf_counter(), speed_load.snapshot()
    timed: list[tuple[int, str, bool, Generation]] = []
    for pair, batch in enumerate(chosen):
        if on_pair is not None:
            on_pair(pair, len(chosen))
        sides = [("baseline", base), ("candidate", cand)]
        if pair % 2:
            sides.reverse()
        for k, (side, prepared) in enumerate(sides):
            out: list[Generation] = []
            prepared.runner.run(prepared.request(batch), out.append)
            timed += [(pair, side, k == 0, g) for g in out]
        elapsed = time.perf_counter() - started
        log(f"{cand.label}: interleaved pair {pair + 1}/{len(chosen)}, elapsed {elapsed:.0f} s, "
            f"ETA {elapsed / (pair + 1) * (len(chosen) - pair - 1):.0f} s")
    record = speed_load.measured(at_start, speed_load.snapshot())
    machine = MachineLoad.model_validate(record) if record else None
    others = f", other processes used {machine.others_share:.0%} of the CPUs" \
        if machine and machine.others_share is not None else ""
    log(f"{cand.label}: interleaved timing done in {time.perf_counter() - started:.1f} s{others}")
    return [Retiming(baseline_key=base.key, pair=pair, side=side, first=first, generation=g, machine=machine)  # pyright: ignore[reportArgumentType]
            for pair, side, first, g in timed]


def retime_once(base: PreparedRun, base_run: RunResult, cand: PreparedRun, result: RunResult,
                log: Callable[[str], None]) -> None:
    """Re-time a sample of both, unless both runs are stored and were re-timed on a machine that was not busy."""
    key = base_run.manifest.key or base.key
    stored = interleaved_of(cand.store.read_interleaved(key), key)
    if base_run.reused and result.reused and stored is not None:
        if not speed_load.busy(speed_load.window_load(stored.machine)):
            log(f"{cand.label}: reusing its interleaved timing against {base.label}")
            return
        log(f"{cand.label}: its stored interleaved timing was on a busy machine: timing it again")
    retime(base, cand, cand.config.timing_batches, log)


def interleaved_of(records: list[Retiming], baseline_key: str) -> Interleaved | None:
    """The last re-timings against that baseline as paired timings, with their windows' busiest load."""
    used: dict[tuple[str, str], Retiming] = {}
    pairs = set()
    for r in records:
        if r.baseline_key != baseline_key or r.generation.error is not None:
            continue
        used[(r.side, r.generation.item_id)] = r
        pairs.add(r.pair)
    base = {item: r.generation for (side, item), r in used.items() if side == "baseline"}
    cand = {item: r.generation for (side, item), r in used.items() if side == "candidate"}
    if not base or not cand:
        return None
    return Interleaved(baseline_key, base, cand, len(pairs), speed_load.busiest([r.machine for r in used.values()]))


def attach(result: RunResult, baseline: RunResult) -> None:
    from evalrun.evals.store import RunStore

    key = baseline.manifest.key
    if key:
        result.interleaved = interleaved_of(RunStore(result.dir).read_interleaved(key), key)


def wanted(cand: PreparedRun, has_speed_rules: bool) -> bool:
    """Whether this candidate is timed interleaved: asked for, or `auto` with speed rules in its gate."""
    mode = cand.config.timing
    return mode == "interleaved" or (mode == "auto" and has_speed_rules)
