"""Teacher-forced scoring: a candidate reads the baseline's answers under its own acceleration, through the
same `generate` call, batches and methods as its own run (docs/drift.md, 'Teacher-forced scoring'); the
forced generations are discarded, its own are never touched. An answer written token for token as the
baseline's is not read again (`watched`), except where items depend on their batch mates
(`Acceleration.shares_batch_state`): there every answer is forced, in its batches.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from evalrun.evals.store import dists as dists_store, run_lock
from evalrun.evals.results import PreparedRun, RunResult
from evalrun.runners.logprobs import ForcedDists, TokenDists

_WATCHES: dict[Path, dict[str, Any]] = {}  # run directory -> the RunRequest fields of the watch open on it


@dataclass
class Scored:
    """Where a candidate's teacher-forced records stand against one baseline."""

    records: dict[str, ForcedDists] = field(default_factory=dict)
    scored_now: int = 0
    seconds: float = 0.0  # spent now (0 when every record was stored already)
    reason: str | None = None  # why there are none: no baseline distributions, a runner that cannot


def baseline_dists(baseline: RunResult, warn: Callable[[str], None]) -> tuple[dict[str, TokenDists], list[str]]:
    """The baseline's usable records: those whose tokens are its stored generation's."""
    answers = {k: list(g.output_ids or []) for k, g in baseline.generations.items() if g.error is None}
    stored = dists_store.read(baseline.dir, TokenDists, warn=warn, answers=answers)
    return {k: r for k, r in stored.records.items() if k in answers}, list(stored.problems)


def cannot(runner: object) -> str | None:
    """Why this runner cannot read tokens teacher-forced (None: it can)."""
    if not getattr(runner, "reads_forced", False):
        return f"{type(runner).__name__} cannot read an answer teacher-forced (Ray actors)"
    if getattr(runner, "continuous", None) is not None:
        return "continuous batching cannot read an answer teacher-forced (its scheduler owns the decode loop)"
    return None


def shares_batch_state(runner: object) -> bool:
    """A method whose items depend on their batch mates (fp8's one scale per tensor)."""
    return any(a.shares_batch_state() for a in getattr(runner, "accelerations", []))


@contextmanager
def watched(cand: PreparedRun, baseline: RunResult, base: dict[str, TokenDists]) -> Iterator[Callable[[], float]]:
    """While `cand` generates: each answer that comes out token for token as the baseline's is stored
    as its forced record then (runners/logprobs.hand_over), so `score` forces only the answers that
    depart. Yields the seconds those records have cost so far."""
    runner = cand.runner
    if not base or cannot(runner) is not None or not hasattr(runner, "watch_seconds") or shares_batch_state(runner):
        yield lambda: 0.0
        return
    name = dists_store.forced_name(baseline.manifest.key or baseline.dir.name)
    sha = {k: dists_store.encode_sha(v) for k, v in base.items()}
    stored = dists_store.read(cand.dir, ForcedDists, name)
    done = {k for k in stored.records if stored.lines[k].baseline_sha256 == sha.get(k)}
    writer = dists_store.DistWriter(cand.dir, name)

    def keep(item_id: str, rec: ForcedDists) -> None:
        if item_id not in done:  # a re-ask of a flipped item may write the baseline's answer again
            writer.append(item_id, rec, sha[item_id])
            done.add(item_id)

    _WATCHES[cand.dir] = {"watched": {k: v for k, v in base.items() if k not in done}, "on_forced": keep}
    start = runner.watch_seconds
    try:
        yield lambda: runner.watch_seconds - start
    finally:
        _WATCHES.pop(cand.dir, None)


def watch_of(run_dir: Path) -> dict[str, Any]:
    """The RunRequest fields (`watched`, `on_forced`) of the watch open on the run in `run_dir`; {} when none."""
    return _WATCHES.get(run_dir, {})


def score(cand: PreparedRun, result: RunResult, baseline: RunResult, base: dict[str, TokenDists],
          log: Callable[[str], None]) -> Scored:
    """The candidate's records against `baseline`, teacher-forcing the answered items that have none yet."""
    name = dists_store.forced_name(baseline.manifest.key or baseline.dir.name)
    if not base:
        return Scored(reason="no logprobs stored with the baseline")
    wanted = [it for it in cand.items if it.id in base and it.id in result.generations]
    stored = dists_store.read(cand.dir, ForcedDists, name, warn=log)
    sha = {k: dists_store.encode_sha(v) for k, v in base.items()}
    done = {k: r for k, r in stored.records.items() if stored.lines[k].baseline_sha256 == sha.get(k)}
    todo = [it for it in wanted if it.id not in done]
    if not todo:
        return Scored(records=done)
    reason = cannot(cand.runner)
    if reason is not None:
        return Scored(records=done, reason=reason)
    runner = cand.runner
    writer = dists_store.DistWriter(cand.dir, name)
    log(f"{cand.label}: teacher-forced scoring of {len(todo)} items on {baseline.name}'s answers")
    with run_lock(cand.dir, log, cand.label):

        def keep(item_id: str, rec: ForcedDists) -> None:
            writer.append(item_id, rec, sha[item_id])
            done[item_id] = rec

        start = time.perf_counter()
        # the forced answers are not the candidate's: discarded
        runner.run(cand.request(todo, forced={it.id: base[it.id] for it in todo}, on_forced=keep), lambda _gen: None)
        seconds = time.perf_counter() - start
    # a served engine learns only while reading that it cannot (no prompt logprobs), or skips an item
    forcing = getattr(runner, "forcing", None)
    for skipped in getattr(forcing, "forced_skipped", None) or []:
        log(f"{cand.label}: teacher-forced read without a record: {skipped}")
    problem = getattr(forcing, "forced_problem", None)
    return Scored(records=done, scored_now=len(todo), seconds=seconds, reason=problem)


__all__ = ["Scored", "baseline_dists", "cannot", "score", "shares_batch_state", "watch_of", "watched"]
