"""The Python API behind the CLI: load configs, run them, score, compare, gate (docs/python-api.md)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Sequence

from evalrun.evals.run import (
    CheckResult, Plan, Progress, RunFailed, check_stored_items, confirm, execute_run, inspect_run, plan_from_run,
    prepare_checked, run_candidate, run_control, stopped_text,
)
from evalrun.evals.drift import Drift, rules as drift_rules, runs as drift_runs
from evalrun.evals.speed import interleave
from evalrun.evals.files import ConfigError, store_files
from evalrun.evals.results import PreparedRun, RunResult, load_stored, replicate_choice, served, stored_replicates
from evalrun.evals.results import Rescored as Rescored, rescore as rescore  # re-exported: api.rescore
# re-exported: api.load_sweep, api.export_pack
from evalrun.evals.run import LoadSweep as LoadSweep, export_pack as export_pack, load_sweep as load_sweep
from evalrun.evals.scoring import PackMetrics, ScoredItem, Stability, pack_metrics, score_run, stability
from evalrun.evals.config import RunConfig, load_config
from evalrun.evals.calibrate import NoiseProfile, load_profile
from evalrun.evals.calibrate import Calibration as Calibration, calibrate as calibrate  # re-exported: api.calibrate
from evalrun.evals.gate import (
    GateConfig, Status, Verdict, acceptance_rule, check_acceptance, check_control, check_gate, collapse_rule,
    coverage_gaps, evaluate, evaluate_speed, load_gate, load_gate_file, overall_exit_code, overall_status, plan_gaps,
    provenance, subset_text,
)
from evalrun.evals.speed import flag_changes
from evalrun.evals.compare import Comparison, attribute, pair
from evalrun.evals.timing import SLO
from evalrun.evals.store import RunStore
from evalrun.contract.types import Item


def load(path: str | Path) -> RunConfig:
    return load_config(path)


def run(
    config: RunConfig,
    out: str | Path = "runs",
    limit: int | None = None,
    progress: Progress | None = None,
    log: Callable[[str], None] = print,
    replicate: int = 0,
    fresh: bool = False,
    keep_servers: bool = False,
) -> RunResult:
    """Generate (or resume, or reuse) one configuration's run; `fresh` sets a stored run aside first;
    `keep_servers` leaves a server launched for it (`server:`) up when the run ends."""
    prepared = prepare_checked(config, out, limit, replicate)
    served.before_runs([prepared], keep_servers, log)
    return execute_run(prepared, progress, log, fresh)


def check_gates(gates: list[GateConfig | None], items: list[Item], control: bool = True) -> None:
    """Every gate against the packs, fields and shapes of the compared runs (ConfigError on an unknown name),
    and against a control run's absence (`flips: flag_only` needs one)."""
    check_control(gates, control)
    packs = {it.pack for it in items}
    names = {f.name for it in items for f in it.fields}
    shapes = {it.meta.shape for it in items if it.meta.shape}
    for gate in gates:
        if gate is not None:
            check_gate(gate, packs, names, shapes, items)


def score(result: RunResult) -> list[ScoredItem]:
    return score_run(result.items, result.generations)


@dataclass(frozen=True)
class PairedRun:
    """A run paired with the baseline: its scores, their metrics, the comparison, and its teacher-forced
    drift where stored (evals/drift/_drift.py). The A/A noise floor is one, never gated."""

    run: RunResult
    scored: list[ScoredItem]
    metrics: dict[str, PackMetrics]
    comparison: Comparison
    drift: Drift | None = None

    @property
    def name(self) -> str:
        return self.run.name


@dataclass(frozen=True, kw_only=True)
class CandidateReport(PairedRun):
    """One candidate, built once: its pairing with the baseline, the gate it was judged by, and the verdict."""

    gate: GateConfig
    verdict: Verdict


@dataclass(frozen=True)
class CompareReport:
    """Everything a renderer needs: the baseline and its scores, one record per candidate, the
    baseline's replicates and their stability, and the A/A noise floor if one was run."""

    baseline: RunResult
    baseline_scored: list[ScoredItem]
    candidates: tuple[CandidateReport, ...]
    noise_floor: PairedRun | None = None
    replicates: list[RunResult] = field(default_factory=list)  # the baseline's, beyond the baseline itself
    stability: Stability | None = None
    slo: SLO | None = None
    drift_note: str | None = None  # why no run has drift at all ("no logprobs stored")
    control: PairedRun | None = None  # --control: paired with the baseline, never gated; attributes the flips

    @property
    def verdicts(self) -> list[Verdict]:
        return [c.verdict for c in self.candidates]

    @property
    def comparisons(self) -> list[Comparison]:
        return [c.comparison for c in self.candidates]

    @property
    def paired(self) -> list[PairedRun]:
        """The noise floor (first, if any) and the candidates."""
        return [*([self.noise_floor] if self.noise_floor else []), *self.candidates]

    @property
    def scored(self) -> dict[str, list[ScoredItem]]:
        """Scores by run name, the baseline's included."""
        return {self.baseline.name: self.baseline_scored, **{p.name: p.scored for p in self.paired}}

    @property
    def drift(self) -> dict[str, Drift]:
        """Teacher-forced drift by run name (the noise floor and candidates) where stored."""
        return {p.name: p.drift for p in self.paired if p.drift is not None}

    @property
    def status(self) -> Status:
        """fail if any candidate regressed, else incomplete if any verdict has gaps, else pass."""
        return overall_status(self.verdicts)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def exit_code(self) -> int:
        return overall_exit_code(self.verdicts)


def compare_results(
    baseline: RunResult,
    candidates: Sequence[tuple[RunResult, GateConfig | None]],
    gate: GateConfig | None = None,
    noise_floor: RunResult | None = None,
    replicates: list[RunResult] | None = None,
    scored: dict[Path, list[ScoredItem]] | None = None,
    slo: SLO | None = None,
    replicates_origin: str = "",
    subset: bool = False,
    drift: bool = True,
    drift_seconds: dict[Path, float] | None = None, drift_reasons: dict[Path, str] | None = None,
    control: RunResult | None = None, profile: NoiseProfile | None = None,
) -> CompareReport:
    """Score, pair and gate stored results; no model is involved from here on.

    `gate` (e.g. from --gate) overrides each candidate's own. `replicates` are the
    baseline's repeats: the gate counts flips only on fields stable across them
    and tests against their A/A rate; the first is shown as the noise floor (or
    `noise_floor`), compared but never gated. Re-asks stored with a candidate
    (`confirm`) decide which of its flips reproduce. `scored`: runs already scored, by directory.
    `replicates_origin` says why these replicates (every verdict names the ones it used).
    Items of the baseline's plan the candidate does not pair are gaps (evals.gate), unless
    `subset`: then the verdict is judged on the items both asked and says SUBSET.
    Everything a verdict depends on (drift included) is measured first: each verdict is final when built.
    `control`: paired with the baseline, not gated: attributes each harmful flip (docs/gate.md); `profile`: the
    baseline's noise profile (evalrun calibrate), named in every verdict and its measured power in each power line."""
    done = scored or {}

    def paired(result: RunResult, chosen: GateConfig) -> PairedRun:
        cand_scored = done[result.dir] if result.dir in done else score(result)
        comparison = pair(base_scored, cand_scored, baseline.name, result.name, confidence=chosen.confidence)
        return PairedRun(result, cand_scored, pack_metrics(cand_scored), comparison)

    base_scored = done[baseline.dir] if baseline.dir in done else score(baseline)
    replicates = list(replicates or [])
    stab = stability([base_scored, *(done[r.dir] if r.dir in done else score(r) for r in replicates)])
    noise_floor = noise_floor or (replicates[0] if replicates else None)
    floor = paired(noise_floor, gate or GateConfig()) if noise_floor is not None else None
    chosen = [gate or cand_gate or GateConfig() for _, cand_gate in candidates]
    check_control(chosen, control is not None)
    ctrl = paired(control, gate or GateConfig()) if control is not None else None
    cands = [paired(result, its_gate) for (result, _), its_gate in zip(candidates, chosen)]
    for c, its_gate in zip(cands, chosen):
        attribute(c.comparison, ctrl.scored if ctrl else None)
        confirm.apply(c.comparison, RunStore(c.run.dir).read_confirmations(), c.run.items, its_gate.confirm)
    # drift measured on every pairing (evals/drift/runs.py reads these names), before any verdict
    measured = SimpleNamespace(baseline=baseline, noise_floor_run=noise_floor, noise_floor=floor and floor.comparison,
                               candidates=[c.run for c in cands], comparisons=[c.comparison for c in cands],
                               scored={baseline.name: base_scored, **{p.name: p.scored for p in [floor, *cands] if p}},
                               drift={}, drift_note=None)
    if drift:
        drift_runs.add_drift(measured, drift_seconds or {}, drift_reasons)
    records = []
    for cand, its_gate in zip(cands, chosen):
        result = cand.run
        stop = result.manifest.early_stop if result.manifest.status == "stopped" else None
        interleave.attach(result, baseline)
        speed = evaluate_speed(its_gate.speed, result.name, baseline, result, slo, its_gate.confidence)
        speed += acceptance_rule(its_gate, result.name, result.manifest.effects)
        speed += collapse_rule(its_gate, result.name, result.items, base_scored, cand.scored)
        scope, stopped = plan_gaps(baseline, result), stopped_text(result.manifest)
        drifted = drift_rules.evaluate_drift(its_gate, result.name, measured.drift.get(result.name),
                                             measured.drift_note, {it.id: it.pack for it in result.items},
                                             bool(stopped))
        applied = provenance(baseline.manifest, result.manifest, flag_changes(baseline.manifest.to_dict(),
                                                                               result.manifest.to_dict()))
        verdict = evaluate(cand.comparison, its_gate, [*coverage_gaps(baseline, result), *applied.gaps,
                                                       *([] if subset else scope)],
                           stab, decided=stop.rules if stop is not None else None, speed=speed, drift=drifted,
                           stopped=stopped, subset=subset_text(scope) if subset and scope else None,
                           replicates=[r.dir.name for r in replicates],
                           first_notes=[*replicate_choice.notes(replicates, replicates_origin, its_gate.confirm),
                                        *([profile.note()] if profile else []), *applied.notes],
                           measured=profile.measured() if profile else None)
        records.append(CandidateReport(result, cand.scored, cand.metrics, cand.comparison,
                                       measured.drift.get(result.name), gate=its_gate, verdict=verdict))
    floor = floor and replace(floor, drift=measured.drift.get(floor.name))
    return CompareReport(baseline, base_scored, tuple(records), floor, replicates, stab, slo,
                         measured.drift_note, ctrl)


def compare(
    baseline: RunConfig,
    candidates: list[RunConfig],
    out: str | Path = "runs",
    limit: int | None = None,
    progress_factory: Callable[[], Progress] | None = None,
    log: Callable[[str], None] = print,
    gate: GateConfig | None = None,
    noise_floor: bool = False,
    fresh: bool = False,
    replicates: int | None = None,
    early_stop: bool = True,
    confirm_n: int | None = None,
    slo: SLO | None = None,
    subset: bool = False,
    keep_servers: bool = False,
    drift: bool = False, control: RunConfig | None = None,
) -> CompareReport:
    """Run (or reuse) the baseline and every candidate, pair each with the baseline and gate it.

    `replicates` runs the baseline that many times in all, each replicate in other
    batches (`noise_floor` asks for at least 2): the gate then knows the noise. None: the
    repeats of the baseline's noise profile where `evalrun calibrate` stored one, else 1. A
    candidate with the baseline's name is a repeat of it (an A/A comparison): it
    is generated again as a further replicate instead of reusing the stored run.
    A candidate stops generating once its FAIL is decided, unless not `early_stop`.
    `confirm_n` overrides each gate's `confirm` (re-asks per flipped item). `slo` (default: the
    baseline config's `slo:`) is what goodput counts against. A candidate timed `interleaved`
    (or `auto` with speed rules) has a sample of batches of both re-timed side by side.
    A `limit`, or a candidate asking less than the baseline, is INCOMPLETE unless `subset`.
    Configs with `server:` have their engine launched only when they generate, one at a time
    (`keep_servers`: left up afterwards). `control` runs in full before the candidates (docs/gate.md).
    `drift`: candidates read the baseline's stored answers teacher-forced (evals/drift/teacher_force.py)."""
    _distinct_names([baseline, *candidates, *([control] if control else [])], baseline)
    # prepare everything first (items, keys; no model weights): a gate naming an unknown pack
    # or field is an error before any generation, not a rule lost after an hour of it
    plan: list[PreparedRun] = [prepare_checked(baseline, out, limit)]
    profile = load_profile(plan[0].dir, plan[0].key) if replicates is None else None
    replicates, origin = _replicates(profile, replicates, noise_floor)
    for j in range(1, replicates):
        plan.append(prepare_checked(baseline, out, limit, j))
        plan[-1].role = "replicate"
    replicas: dict[str, int] = {baseline.name: replicates - 1}
    for cand in candidates:
        replicas[cand.name] = replicas[cand.name] + 1 if cand.name in replicas else 0
        plan.append(prepare_checked(cand, out, limit, replicas[cand.name]))
    ctrl_plan = [prepare_checked(control, out, limit)] if control is not None else []
    check_gates([gate, *(c.gate for c in candidates)], [it for p in plan for it in p.items], control is not None)
    for cand in candidates:
        check_acceptance(gate or cand.gate, cand.name, cand.accelerations())
    served.before_runs([*plan, *ctrl_plan], keep_servers, log)

    def progress() -> Progress | None:
        return progress_factory() if progress_factory else None

    base_runs = [execute_run(plan[0], progress(), log, fresh)]
    watch = drift_runs.Watch(base_runs[0], log) if drift else None  # answers equal to the baseline's need no forcing
    for p in plan[1:replicates]:
        with drift_runs.watching(watch, p):
            base_runs.append(execute_run(p, progress(), log, fresh))
    scored = {r.dir: score(r) for r in base_runs}
    base_scored = scored[base_runs[0].dir]
    stab = stability([scored[r.dir] for r in base_runs])
    ctrl_run, explained = run_control(ctrl_plan[0] if ctrl_plan else None, base_scored, progress(), log, fresh)
    results = []
    for p, cand in zip(plan[replicates:], candidates):
        chosen = gate or cand.gate or GateConfig()
        chosen = chosen if confirm_n is None else chosen.model_copy(update={"confirm": confirm_n})
        with drift_runs.watching(watch, p):
            result = run_candidate(p, base_scored, stab, chosen, early_stop, progress(), log, fresh, explained)
        if interleave.wanted(p, bool(chosen.speed)) and result.manifest.status == "complete":
            interleave.retime_once(plan[0], base_runs[0], p, result, log)
        results.append((result, chosen))
    for result, chosen in results:  # so that `report` of these runs gates them the same way
        replicate_choice.record(result, base_runs[0], base_runs[1:], chosen.confirm, log)
    read = [*zip(plan[1:2], base_runs[1:2]), *zip(plan[replicates:], [r for r, _ in results])]
    forced = drift_runs.force_all(base_runs[0], read, log, watch) if drift else drift_runs.Forced()
    return compare_results(base_runs[0], results, replicates=base_runs[1:], scored=scored,
                           slo=slo or baseline.slo, replicates_origin=origin, subset=subset,
                           drift_seconds=forced.seconds, drift_reasons=forced.reasons, control=ctrl_run, profile=profile)


def _replicates(profile: NoiseProfile | None, asked: int | None, noise_floor: bool) -> tuple[int, str]:
    """Baseline runs in all, and why: --replicates, else the repeats of a stored noise profile, else one."""
    origin = ("the noise profile's repeats (evalrun calibrate)" if profile and profile.replicates else
              "the noise profile: the answers did not move between its repeats" if profile else
              f"--replicates {asked}" if asked and asked > 1 else "not asked for")
    runs = (profile.repeats if profile.replicates else 1) if profile else asked or 1
    return max(runs, 2 if noise_floor else 1), origin


def _distinct_names(configs: list[RunConfig], baseline: RunConfig | None = None) -> None:
    """One name, one configuration: run directories and report columns are named by it; and a baseline that is a
    measuring instrument refused before anything is generated (the comparison would measure nothing)."""
    if baseline is not None and baseline.instrument is not None:
        raise ConfigError(f"the baseline {baseline.name} is a measuring instrument (faults planted into its answers); "
                          "compare against a config without `instrument`", file=baseline.source, path="instrument")
    seen: dict[str, dict[str, Any]] = {}
    for c in configs:
        # the tasks as written: a plain dump gives every pack's params as their base class (the seed only)
        what = c.model_dump(mode="json", exclude={"source", "tasks"}) | {"tasks": c.tasks_dump()}
        if seen.setdefault(c.name, what) != what:
            raise ConfigError(f"two different configurations share the name {c.name!r}; give each a distinct `name`")


def check(configs: Sequence[str | Path | RunConfig], gate: GateConfig | str | Path | None = None,
          out: str | Path = "runs", limit: int | None = None) -> list[CheckResult]:
    """A dry run of `compare` on these configs (in that order): validate them, build every item with the
    tokenizer alone, say what is stored and how long the rest should take. Raises ConfigError on the first
    problem, as `compare` would before generating anything (an unknown name, an unreadable file, edited items)."""
    loaded = [c if isinstance(c, RunConfig) else load(c) for c in configs]
    gate_cfg = load_gate_file(gate) if isinstance(gate, (str, Path)) else gate
    _distinct_names(loaded)
    replicas: dict[str, int] = {}
    plan: list[PreparedRun] = []
    for c in loaded:  # a name given again is a repeat (A/A), stored beside the first as `compare` stores it
        replicas[c.name] = replicas[c.name] + 1 if c.name in replicas else 0
        plan.append(prepare_checked(c, out, limit, replicas[c.name]))
    check_gates([gate_cfg, *(c.gate for c in loaded)], [it for p in plan for it in p.items])
    for p in plan:
        if store_files.exists(p.store.items_path):  # a link there is refused by reading it
            check_stored_items(p.store, p.items)  # the rule `execute` applies before reusing a run
    return [inspect_run(p, out) for p in plan]


def _stored_gate(result: RunResult) -> GateConfig | None:
    data = result.manifest.config.gate
    return None if data is None else load_gate(data, result.dir / "manifest.json", "config.gate")


def report(run_dirs: Sequence[str | Path], gate: GateConfig | None = None, trust_edited_items: bool = False,
           log: Callable[[str], None] = print, slo: SLO | None = None, replicates: int | None = None,
           subset: bool = False, control: str | Path | None = None) -> CompareReport:
    """Re-compare stored runs, the first as the baseline, without loading any model; `control`: a stored
    control run (see `compare`).

    Each run's items must still be the ones it was asked (see `rescore`), unless `trust_edited_items`.
    `replicates` (K baseline runs in all) uses the first K - 1 stored beside the baseline; by default
    the ones the candidates' comparison recorded (evals.results.replicate_choice), so the exit code is compare's."""
    results = [load_stored(d, trust_edited_items, log) for d in run_dirs]
    ctrl = load_stored(control, trust_edited_items, log) if control is not None else None
    names = [r.name for r in [*results, *([ctrl] if ctrl else [])]]
    if len(set(names)) != len(names):
        raise ConfigError(f"the same run is given twice ({', '.join(names)})")
    stored_gates = [_stored_gate(r) for r in results[1:]]
    check_gates([gate, *stored_gates], [it for r in results for it in r.items])
    for r, own in zip(results[1:], stored_gates):
        check_acceptance(gate or own, r.name, r.manifest.config.acceleration)
    stored_gates = replicate_choice.with_recorded_confirm(results[0], results[1:], stored_gates)
    chosen, origin = replicate_choice.for_report(results[0], results[1:], replicates, trust_edited_items, log)
    profile = load_profile(results[0].dir, results[0].manifest.key)
    used = [r.dir.name for r in chosen]
    profile = profile if profile and used == (profile.runs[1:] if profile.replicates else []) else None
    return compare_results(results[0], list(zip(results[1:], stored_gates)), gate, replicates=chosen, slo=slo,
                           replicates_origin=origin, subset=subset, control=ctrl, profile=profile)


def plan(config: RunConfig, rate: float, power: float = 0.95, out: str | Path = "runs", limit: int | None = None,
         gate: GateConfig | None = None, log: Callable[[str], None] = print) -> Plan:
    """Items each pack would need to detect a harmful flip rate `rate` with probability `power`,
    measured from the config's stored run (and replicates stored beside it); no model is loaded."""
    prepared = prepare_checked(config, out, limit, writable=False)  # only reads the stored run
    if not prepared.store.exists() or not prepared.store.samples_path.exists():
        raise ConfigError(f"no stored run of this config at {prepared.dir}: plan measures from one; "
                          f"run `evalrun run {config.source or 'CONFIG'}` first", file=config.source)
    base = RunResult.load(prepared.dir, log=log)
    return plan_from_run(base, stored_replicates(base, log=log), rate, power, gate)

