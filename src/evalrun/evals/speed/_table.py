"""The speed-accuracy table: each run's speed beside the accuracy it costs, computed once for every renderer.

No claim where it would not be honest: an emulated method (masked dense matmuls cost the same), another device
or dtype, or memory peaks not both of their own run alone (evals/run/_memory.py) (docs/speed.md)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from pydantic import BaseModel, Field as PydField

from evalrun.contract.manifest import PeakMemory, RunManifest
import evalrun.evals.speed._served as served
from evalrun.evals.speed._served import ServerTimings, engine_label
from evalrun.evals import stats
import evalrun.evals.speed.capacity as capacity
from evalrun.evals.timing import latency
import evalrun.evals.speed._speed as speed
from evalrun.evals.timing import BOOTSTRAP_RESAMPLES, SLO, Speedup, load as speed_load
from evalrun.runners import accel

EMULATED_NOTE = "emulated — no speed claim"
NOT_COMPARABLE_NOTE = "different device or dtype than the baseline: not comparable"
SPEED_ONLY = "speed only"
SPREAD_NOTE = ("Speedups are the median over the requests both runs timed of baseline / candidate of each latency "
               "(above 1 is faster); [low, high] is a 95% paired bootstrap interval, requests resampled. In batched runs "
               "requests share their batch's steps, so the interval is narrower than independent requests would "
               "give.")
SPEEDUP_METRICS = ("ttft_p50", "tpot_p50", "itl_p50", "e2el_p50")
Figures = dict[str, dict[str, float | None]]  # metric -> {"mean", "p50", ..., "n"}


class GroupRow(BaseModel):
    """One pack, latency shape or context-length bucket of one run."""

    kind: str  # pack | shape | bucket
    name: str
    items: int
    metrics: Figures
    request_throughput: float | None = None
    output_throughput: float | None = None
    goodput_share: float | None = None


class SpeedRow(BaseModel):
    run: str
    role: str
    method: str
    device: str
    dtype: str
    items_timed: int
    speed_note: str | None  # replaces every speed claim when there is no honest one
    accuracy_delta_points: float | None
    harmful_flips: int | None
    load_seconds: float | None
    effects: list[str]
    engine: str | None = None  # a served engine's own word on what it runs, shown beside its flags
    clock: str | None = None
    device_kind: str | None = None  # "cpu: <model>", "cuda: NVIDIA H200": ratios across kinds compare devices
    batch_size: int | None = None
    concurrency: int | None = None
    # vLLM's figures: each latency's distribution, throughput over the run's wall clock, goodput
    metrics: Figures = PydField(default_factory=dict)
    duration_seconds: float | None = None
    throughput_basis: str | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    goodput: dict[str, Any] | None = None
    # a served run's engine's own timings (means), beside the client's; None for a run in process
    server_timings: ServerTimings | None = None
    # against the baseline, at SPEEDUP_METRICS (absent for the baseline or without an honest claim)
    speedups: dict[str, Speedup] = PydField(default_factory=dict)
    speedup_basis: str | None = None
    timing: str | None = None  # "interleaved" or "sequential": shown beside every speedup
    timing_warning: str | None = None  # sequential timings that follow the machine's load (evals/timing/load.py)
    timing_note: str | None = None  # how the speedups were timed, in a sentence (the warning when there is one)
    peak_memory_bytes: int | None = None
    peak_memory_kind: str | None = None  # what the peak measures, in words
    memory_saved_bytes: int | None = None
    kv_bytes_per_token: float | None = None
    kv_bytes_at_longest: int | None = None
    kv_longest_tokens: int | None = None
    accuracy_ci_low_points: float | None = None
    accuracy_ci_high_points: float | None = None
    speed_only: bool = False
    requests_per_second_per_device: float | None = None
    devices_needed: int | None = None
    groups: list[GroupRow] = PydField(default_factory=list)
    # the per-request values the distribution pictures draw (not written to JSON)
    samples: dict[str, list[float]] = PydField(default_factory=dict, exclude=True)

    def speedup(self, metric: str) -> Speedup | None:
        return self.speedups.get(metric)


class SpeedTable(BaseModel):
    rows: list[SpeedRow]
    spread_note: str = SPREAD_NOTE
    capacity_note: str | None = None
    server_note: str | None = None  # where each served run's engine timings come from
    percentiles: list[float] = PydField(default_factory=lambda: list(latency.PERCENTILES))
    slo: str | None = None


def method_label(manifest: dict[str, Any], baseline: dict[str, Any] | None = None) -> str:
    """"kv_cache (int4 quanto)", as each method labels itself; a served run's engine and flags against `baseline`;
    a measuring instrument's says so first (runners/fault.py), where a clipped cell still shows it."""
    label = engine_label(manifest, baseline) or accel.method_label(
        (manifest.get("config") or {}).get("acceleration") or {})
    instrument = RunManifest.model_validate(manifest).instrument_record
    return f"measuring instrument ({instrument.text()}) on {label}" if instrument else label


def effects_facts(manifest: dict[str, Any]) -> list[str]:
    """Headline facts: what each acceleration measured, where a Ray run's items ran, answers cut at the limit."""
    return (accel.headlines(manifest.get("effects") or {}) + served_kv_facts(manifest)
            + executor_facts(manifest.get("executor") or {}) + length_facts(manifest.get("finish_reasons") or {}))


def served_kv_facts(manifest: dict[str, Any]) -> list[str]:
    """A served engine's own word on what it runs (runners/openai/_evidence.py): the proof a flag took effect."""
    from evalrun.runners.openai import evidence_text, stored_evidence

    if manifest.get("runner") != "openai":
        return []
    said = stored_evidence(manifest)
    return [f"engine: {evidence_text(said)}" if said else "engine: said nothing of its cache or kernels"]


def length_facts(reasons: dict[str, int]) -> list[str]:
    """Answers the engine ended at max_new_tokens (finish_reason length): a cut-off can cost a field."""
    cut = reasons.get("length", 0)
    return [f"{cut} of {sum(reasons.values())} answers cut at max_new_tokens"] if cut else []


def executor_facts(executor: dict[str, Any]) -> list[str]:
    actors = [a for a in executor.get("actors", []) if a.get("items")]
    if executor.get("kind") != "ray" or not actors:
        return []
    each = ", ".join(f"{a['actor']} {a['items']} items at {a['items_per_second'] or 0:.3g}/s" for a in actors)
    lost = len(executor.get("failures") or [])
    return [f"ray: {len(actors)} actors ({each}); {executor.get('items_per_second') or 0:.3g} items/s over the "
            f"wall clock" + (f"; {lost} actor failure(s), their units re-queued" if lost else "")]


def _memory_kind(peak: PeakMemory) -> str:
    what = "CUDA max allocated" if peak.kind == "cuda_max_allocated" else "process peak RSS"
    return what + ("" if peak.scope == "run" else " (process lifetime)")


def _figures(fig: dict[str, Any]) -> Figures:
    return {m: {k: v for k, v in fig[m].items()} for m in latency.METRICS}


def _row(run: Any, role: str, percentiles: Sequence[float], slo: SLO | None, base: Any = None) -> SpeedRow:
    m: RunManifest = run.manifest
    gens = list(run.generations.values())
    fig = speed.timing_figures(gens, percentiles, slo)
    peak = m.speed.peak_memory if m.speed else None
    kv = m.speed.kv_cache if m.speed else None
    kinds = {"packs": "pack", "shapes": "shape", "buckets": "bucket"}
    groups = [GroupRow(kind=kinds[kind], name=g[kinds[kind]], items=g["items"], metrics=_figures(g),
                       request_throughput=g["request_throughput"], output_throughput=g["output_throughput"],
                       goodput_share=(g.get("goodput") or {}).get("share"))
              for kind, rows in speed.by_group(gens, run.items, percentiles, slo).items() for g in rows]
    as_written = m.to_dict()  # the label and effects functions read the manifest as written
    server = as_written.get("server") or {}
    ok = [g for g in gens if g.error is None]
    return SpeedRow(
        run=run.name, role=role, method=method_label(as_written, base.manifest.to_dict() if base is not None else None), device=m.device or "", dtype=m.dtype or "",
        items_timed=speed.run_timing(run)[0], speed_note=None, accuracy_delta_points=None, harmful_flips=None,
        load_seconds=m.load_seconds, effects=effects_facts(as_written), clock=m.speed.clock if m.speed else None,
        engine=next(iter(served_kv_facts(as_written)), None),
        device_kind=m.device_kind,
        batch_size=fig["batch_size_max"], concurrency=server.get("concurrency"),
        metrics=_figures(fig), duration_seconds=fig["duration_seconds"], throughput_basis=fig["throughput_basis"],
        request_throughput=fig["request_throughput"], output_throughput=fig["output_throughput"],
        goodput=fig.get("goodput"), server_timings=served.server_timings(server),
        peak_memory_bytes=peak.bytes if peak else None, peak_memory_kind=_memory_kind(peak) if peak else None,
        kv_bytes_per_token=kv.bytes_per_token if kv else None,
        kv_bytes_at_longest=kv.bytes_at_longest_context if kv else None,
        kv_longest_tokens=kv.longest_context_tokens if kv else None,
        groups=groups, samples={"ttft": latency.values(ok, "ttft"), "tpot": latency.values(ok, "tpot")},
    )


def _accuracy(comp: Any) -> tuple[float | None, float | None, float | None, bool]:
    """(delta, CI low, CI high) in points over the packs that score fields, and whether none does."""
    scored = [pc for pc in comp.packs if not pc.speed_only]
    if not scored:
        return None, None, None, bool(comp.packs)
    b_ok = [ok for pc in scored for ok in pc.base_ok]
    c_ok = [ok for pc in scored for ok in pc.cand_ok]
    if not b_ok:
        return None, None, None, False
    iv0 = next((pc.stats.interval for pc in scored if pc.stats), None)
    iv = stats.bootstrap_accuracy_delta(np.asarray(b_ok), np.asarray(c_ok),
                                        n_resamples=iv0.n_resamples if iv0 else BOOTSTRAP_RESAMPLES,
                                        confidence=iv0.confidence if iv0 else 0.95, seed=0)
    return 100.0 * iv.delta, 100.0 * iv.low, 100.0 * iv.high, False


def _claim_against(row: SpeedRow, base_row: SpeedRow, base: Any, run: Any) -> None:
    """Speedups, memory saved: only where the comparison is honest."""
    m, bm = run.manifest, base.manifest
    if m.emulated:
        row.speed_note = f"{', '.join(m.emulated)}: {EMULATED_NOTE}"
        return
    if (m.device, m.dtype) != (bm.device, bm.dtype):
        if row.items_timed and base_row.items_timed:
            row.speed_note = NOT_COMPARABLE_NOTE
        return
    b_gens, c_gens, basis = latency.pair_timings(base, run)
    row.speedup_basis = basis
    for name in SPEEDUP_METRICS:
        if (sp := latency.speedup(b_gens, c_gens, name, basis=basis)) is not None:
            row.speedups[name] = sp
    if row.speedups:
        judged = speed_load.timing(base, run, basis)
        row.timing, row.timing_warning = judged.label, judged.warning
        row.timing_note = judged.note
    bp = (bm.speed.peak_memory if bm.speed else None) or PeakMemory()
    cp = (m.speed.peak_memory if m.speed else None) or PeakMemory()
    if bp.scope == cp.scope == "run" and bp.kind == cp.kind and bp.bytes is not None and cp.bytes is not None:
        row.memory_saved_bytes = bp.bytes - cp.bytes


def speed_table(report: Any, inputs: capacity.CapacityInputs | None = None,
                percentiles: Sequence[float] = latency.PERCENTILES, slo: SLO | None = None) -> SpeedTable:
    """The table for a `CompareReport` (evals.api): baseline first, then the A/A repeat and the candidates."""
    inputs = inputs or capacity.CapacityInputs()
    slo = slo if slo is not None else getattr(report, "slo", None)
    base = report.baseline
    base_row = _row(base, "baseline", percentiles, slo)
    rows = [base_row]
    all_speed_only = True
    paired = report.paired  # the A/A repeat (first, if any) and the candidates
    for p in paired:
        run, comp, role = p.run, p.comparison, "candidate" if hasattr(p, "verdict") else "repeat (A/A)"
        row = _row(run, role, percentiles, slo, base)
        row.accuracy_delta_points, row.accuracy_ci_low_points, row.accuracy_ci_high_points, row.speed_only = \
            _accuracy(comp)
        all_speed_only &= row.speed_only
        row.harmful_flips = len(comp.harmful)
        _claim_against(row, base_row, base, run)
        rows.append(row)
    base_row.speed_only = bool(paired) and all_speed_only
    for row in rows:
        if row.request_throughput and (row.role == "baseline" or row.speed_note is None):
            est = capacity.estimate(row.request_throughput, inputs)
            row.requests_per_second_per_device, row.devices_needed = est.requests_per_second, est.devices
    note = (capacity.assumptions(inputs, base_row.batch_size, base_row.concurrency, base_row.device)
            if base_row.request_throughput else None)
    return SpeedTable(rows=rows, spread_note=_spread_note(base, base_row, rows, [p.run for p in paired]),
                      capacity_note=note, percentiles=list(percentiles), slo=slo.text() if slo is not None and slo.given() else None,
                      server_note=served.note([(r.run, r.server_timings) for r in rows]))


def _spread_note(base: Any, base_row: SpeedRow, rows: list[SpeedRow], runs: list[Any]) -> str:
    """What a reader must know before trusting the ratios: timing, stored timings, other devices and batches."""
    spread = " ".join([*(f"{r.run}: {r.timing_note}." for r in rows if r.timing_note), SPREAD_NOTE])
    timed_now = [run.name for run in runs if not getattr(run, "reused", True) and run.interleaved is None]
    if getattr(base, "reused", False) and timed_now:
        sessions = base.manifest.sessions
        finished = (sessions[-1].finished if sessions else None) or "an earlier session"
        spread += (f" The baseline's timings are stored from {finished}, while {', '.join(timed_now)} ran now: "
                   "the ratios compare two states of the machine; use `timing: interleaved` (or --fresh) for speed "
                   "claims.")
    other_kind = [f"{r.run} ({r.device_kind})" for r in rows[1:]
                  if r.device_kind and base_row.device_kind and r.device_kind != base_row.device_kind]
    if other_kind:
        spread += (f" {', '.join(other_kind)} ran on another kind of device than the baseline "
                   f"({base_row.device_kind}): its ratios compare the devices as much as the configurations.")
    other_batch = [f"{r.run} (batch {r.batch_size})" for r in rows[1:]
                   if r.batch_size and base_row.batch_size and r.batch_size != base_row.batch_size]
    if other_batch:
        spread += (f" {', '.join(other_batch)} ran at another batch size than the baseline ({base_row.batch_size}): "
                   "its speedups are per-request latency at that batch; throughput is in req/s per device.")
    return spread
