"""Generating a comparison's runs, and confirming harmful flips by re-asking the flipped items (the gate's
`confirm: N`; docs/gate.md). Each re-ask runs in another batch composition, so a noise flip, which depends on
its neighbours in the batch, rarely reproduces in the majority; a stop that the re-asks undo is resumed."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Callable

from evalrun.contract.types import Generation, Item, Reask
from evalrun.evals.compare import Comparison, pair
from evalrun.evals.drift import teacher_force
from evalrun.evals.config import RunConfig
from evalrun.evals.files import ConfigError, StoreWriteFailed, store_files
from evalrun.evals.gate import GateConfig, rule_key
from evalrun.evals.results import PreparedRun, RunResult
from evalrun.evals.run._early_stop import EarlyStop
from evalrun.evals.run._execute import Progress, RunFailed, execute, prepare, set_aside
from evalrun.evals.scoring import FieldKey, ScoredItem, Stability, score_item, score_run
from evalrun.evals.store import run_lock
from evalrun.runners.models import ModelError, ModelNotFound

RESHUFFLE_SEED = 1000  # attempt k >= 2 runs shuffled with seed RESHUFFLE_SEED + k


def attempt_plan(attempt: int, batch_size: int) -> tuple[int, int | None]:
    """(batch size, batch seed) of re-ask `attempt`: batch 1 first, then shuffled batches."""
    return (1, None) if attempt == 1 else (batch_size, RESHUFFLE_SEED + attempt)


def reask(prepared: PreparedRun, item_ids: list[str], attempts: int,
          log: Callable[[str], None] = print) -> dict[str, list[Reask]]:
    """Re-ask `item_ids` until each has `attempts` stored re-asks; returns every stored re-ask."""
    store = prepared.store
    by_id = {it.id: it for it in prepared.items}
    runner = prepared.runner
    with run_lock(prepared.dir, log, prepared.label):
        have = store.read_confirmations()
        asked = 0
        started = time.perf_counter()
        for attempt in range(1, attempts + 1):
            need = [by_id[i] for i in item_ids if i in by_id and all(r.attempt != attempt for r in have.get(i, []))]
            if not need:
                continue
            configured = getattr(runner, "batch_size", 1)
            size, seed = attempt_plan(attempt, configured)
            wanted = {it.id for it in need}
            fillers: list[Item] = []
            if seed is not None and len(need) < configured:
                # a batch of fewer flipped items than the run's batch size gets neighbours from the run,
                # so the re-ask sees another composition than batch 1 (their outputs are not kept)
                others = [it for it in prepared.items if it.id not in wanted]
                fillers = random.Random(seed).sample(others, min(len(others), configured - len(need)))

            def keep(gen: Generation, attempt: int = attempt, seed: int | None = seed,
                     wanted: set[str] = wanted) -> None:
                if gen.item_id in wanted:
                    store.append_confirmation(Reask(attempt=attempt, batch_size=gen.batch_size, seed=seed,
                                                    generation=gen))

            # answers equal to a watched baseline's are recorded as when generating (compare --drift)
            runner.run(prepared.request(need + fillers, batch_size=min(size, configured), batch_seed=seed,
                                        **teacher_force.watch_of(prepared.dir)), keep)
            asked += len(need)
        if asked:
            log(f"{prepared.label}: confirmed {len(item_ids)} flipped item(s) with {asked} re-ask(s) in "
                f"{time.perf_counter() - started:.1f} s")
        return store.read_confirmations()


def to_confirm(comparison: Comparison, limits: dict[str, tuple[int, str]], stab: Stability | None) -> list[str]:
    """The items whose harmful flips a rule of `limits` counts (on gated fields), then the items with a
    field the baseline got right in only some replicates (the candidate's rate there is compared with
    the baseline's, per flip rule and pooled over the pack by max_drop, evals.gate), in item order,
    each once."""
    out: dict[str, None] = {}
    for pc in comparison.packs:
        for f in pc.harmful:
            if rule_key(f.field, f.kind, limits, pc.field_names) and (stab is None or stab.gated(f.item_id, f.field)):
                out[f.item_id] = None
    if stab is not None:
        for pc in comparison.packs:
            paired = set(pc.item_ids)
            for (item_id, _), (pack, _, _, _) in stab.rated.items():
                if pack == pc.pack and item_id in paired:
                    out[item_id] = None
    return list(out)


def apply(comparison: Comparison, reasks: dict[str, list[Reask]], items: list[Item], attempts: int) -> None:
    """Set each harmful flip's confirmations (reproduced, asked) from the first `attempts` stored re-asks."""
    if attempts <= 0:
        return
    by_id = {it.id: it for it in items}
    scored: dict[str, list[ScoredItem]] = {}
    for item_id in {f.item_id for f in comparison.harmful} | {i for pc in comparison.packs for i in pc.item_ids}:
        tries = [r for r in reasks.get(item_id, []) if r.attempt <= attempts]
        if item_id in by_id and tries:
            scored[item_id] = [score_item(by_id[item_id], r.generation) for r in tries]
    for flip in comparison.harmful:
        if flip.item_id in scored:
            asked = scored[flip.item_id]
            flip.confirmations = (sum(not s.field_right(flip.field) for s in asked), len(asked))
    for pc in comparison.packs:
        for item_id in (i for i in pc.item_ids if i in scored):
            for name in scored[item_id][0].kinds:
                pc.reasked[(item_id, name)] = (sum(s.field_right(name) for s in scored[item_id]), len(scored[item_id]))


def prepare_checked(config: RunConfig, out: str | Path, limit: int | None, replicate: int = 0,
                    writable: bool = True) -> PreparedRun:
    """`prepare` with model errors as ConfigError or RunFailed; a store that cannot take runs is exit 2 first."""
    if writable:
        store_files.check_out(Path(out))
    try:
        return prepare(config, out, limit, replicate)
    except ModelNotFound as exc:
        # the model spec names nothing usable, or its package is missing: a configuration problem
        raise ConfigError(str(exc), file=config.source, path="model") from None
    except ModelError as exc:
        raise RunFailed(f"{config.name}: {exc}") from exc


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
                  fresh: bool, explained: frozenset[FieldKey] = frozenset()) -> RunResult:
    """Generate a candidate, stopping once its FAIL is decided (unless not `early_stop`), and re-ask
    its flipped items (`gate.confirm`); a stop that re-asks undo is resumed. `explained`: the fields the
    control lost, which the early stop does not count under `flips: flag_only`."""
    watch = EarlyStop(base_scored, prepared.items, gate.flip_limits(), gate.confidence, stab,
                      gate.collapse) if early_stop else None
    if watch is not None and gate.flips == "flag_only":
        watch.refute(set(explained))
    refuted = -1
    while True:
        result = execute_run(prepared, progress, log, fresh, watch)
        fresh = False
        if gate.confirm:
            scored = score_run(result.items, result.generations)
            comparison = pair(base_scored, scored, "baseline", result.name, confidence=gate.confidence)
            ids = to_confirm(comparison, gate.flip_limits(), stab)
            reasks = reask(prepared, ids, gate.confirm, log) if ids else {}
            apply(comparison, reasks, prepared.items, gate.confirm)
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


def run_control(prepared: PreparedRun | None, base_scored: list[ScoredItem], progress: Progress | None,
                log: Callable[[str], None], fresh: bool) -> tuple[RunResult | None, frozenset[FieldKey]]:
    """A control run (compare --control), generated in full, and the fields it lost that the baseline got
    right: the flips a candidate's early stop does not count under `flips: flag_only`."""
    if prepared is None:
        return None, frozenset()
    result = execute_run(prepared, progress, log, fresh)
    lost = pair(base_scored, score_run(result.items, result.generations), "baseline", result.name).harmful
    return result, frozenset(f.key for f in lost)


def _record_decided(prepared: PreparedRun, result: RunResult, rules: list[str],
                    log: Callable[[str], None]) -> RunResult:
    """The rules a stopped run decided, as they stand after its flips were re-asked."""
    stop = result.manifest.early_stop
    if stop is None or stop.rules == rules:
        return result
    with run_lock(prepared.dir, log, prepared.label):
        result.manifest = result.manifest.merged({"early_stop": stop.model_dump(mode="json") | {"rules": rules}})
        prepared.store.write_manifest(result.manifest)
    return result
