"""Generating the runs of a comparison: a stored run set aside for --fresh, a candidate
stopped once its FAIL is decided, and its flipped items re-asked (`confirm`); a stop that
the re-asks undo is resumed, so a stopped run always stands on confirmed flips.
"""

from __future__ import annotations

from typing import Callable

import evalrun.evals.run.confirm as confirm
from evalrun.evals.run._early_stop import EarlyStop
from evalrun.evals.run._execute import Progress, RunFailed, execute, set_aside
from evalrun.evals.gate import GateConfig
from evalrun.evals.compare import pair
from evalrun.evals.store import run_lock
from evalrun.evals.results import PreparedRun, RunResult
from evalrun.evals.scoring import ScoredItem, Stability, score_run
from evalrun.evals.files import StoreWriteFailed
from evalrun.runners.models import ModelError


def execute_run(prepared: PreparedRun, progress: Progress | None, log: Callable[[str], None], fresh: bool,
                watch: EarlyStop | None = None) -> RunResult:
    """Generate (or resume, or reuse) one prepared run; `fresh` sets a stored one aside first."""
    if fresh and prepared.dir.exists():
        with run_lock(prepared.dir, log, prepared.label):  # never move a run from under its writer
            moved = set_aside(prepared.dir)
        if moved:
            log(f"{prepared.label}: --fresh: previous run moved to {moved}")
    try:
        return execute(prepared, progress=progress, log=log, watch=watch)
    except ModelError as exc:
        raise RunFailed(f"{prepared.config.name}: {exc}") from exc
    except StoreWriteFailed as exc:  # before generating (items, the manifest): nothing is lost
        raise RunFailed(f"{prepared.label}: {exc}") from exc


def run_candidate(prepared: PreparedRun, base_scored: list[ScoredItem], stab: Stability, gate: GateConfig,
                  early_stop: bool, progress: Progress | None, log: Callable[[str], None],
                  fresh: bool) -> RunResult:
    """Generate a candidate, stopping once its FAIL is decided (unless not `early_stop`), and re-ask
    its flipped items (`gate.confirm`); a stop that re-asks undo is resumed."""
    watch = EarlyStop(base_scored, prepared.items, gate.flip_limits(), gate.confidence, stab) if early_stop else None
    refuted = -1
    while True:
        result = execute_run(prepared, progress, log, fresh, watch)
        fresh = False
        if gate.confirm:
            scored = score_run(result.items, result.generations)
            comparison = pair(base_scored, scored, "baseline", result.name, confidence=gate.confidence)
            ids = confirm.to_confirm(comparison, gate.flip_limits(), stab)
            reasks = confirm.reask(prepared, ids, gate.confirm, log) if ids else {}
            confirm.apply(comparison, reasks, prepared.items, gate.confirm)
            if watch is not None:
                watch.refute({f.key for f in comparison.harmful if f.confirmed is False})
        if watch is None or result.manifest.status != "stopped" or len(result.generations) == len(prepared.items):
            return result
        if watch.decided():
            return _record_decided(prepared, result, watch.decided(), log)
        if len(watch.refuted) == refuted:
            return result  # nothing new was refuted: resuming again would stop at the same place
        refuted = len(watch.refuted)
        log(f"{prepared.label}: the re-asks did not reproduce the flips that decided the FAIL: resuming")


def _record_decided(prepared: PreparedRun, result: RunResult, rules: list[str], log: Callable[[str], None]) -> RunResult:
    """The rules a stopped run decided, as they stand after its flips were re-asked."""
    stop = result.manifest.early_stop
    if stop is None or stop.rules == rules:
        return result
    with run_lock(prepared.dir, log, prepared.label):
        result.manifest = result.manifest.merged({"early_stop": stop.model_dump(mode="json") | {"rules": rules}})
        prepared.store.write_manifest(result.manifest)
    return result


