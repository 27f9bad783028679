"""The speed-accuracy table: each run's speed beside the accuracy it costs, and what it means for capacity.

One computation for every renderer (terminal, Markdown, HTML): the reports lay
out a `SpeedTable` and compute nothing.

- Speedups are ratios of medians over the items both runs timed (TTFT:
  baseline / candidate; decode tokens/s: candidate / baseline), with a 95%
  paired bootstrap interval of that ratio (items resampled).
- No speed claim where it would not be honest: a method marked `emulated`
  (masked dense matmuls cost the same) says EMULATED_NOTE; a run on another
  device or dtype than the baseline is not comparable.
- Memory saved is claimed only when both peaks cover their own run alone
  (see evals/memory.py) and are of the same kind.
- The accuracy delta pools the packs that score fields, with the paired
  bootstrap interval; a comparison whose packs ask for no fields is "speed only".
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, Field as PydField

from evalrun.contract.manifest import PeakMemory, RunManifest
from evalrun.evals import capacity, speed, stats
from evalrun.runners import accel

EMULATED_NOTE = "emulated — no speed claim"
NOT_COMPARABLE_NOTE = "different device or dtype than the baseline: not comparable"
SPEED_ONLY = "speed only"
SPREAD_NOTE = ("Speedups are ratios of medians over the items both runs timed (TTFT: baseline / candidate; decode "
               "tokens/s: candidate / baseline); [low, high] is a 95% paired bootstrap interval of the ratio, items "
               "resampled. In batched runs items share their batch's timings, so the interval is narrower than "
               "independent requests would give.")
BOOTSTRAP_RESAMPLES = 2000


class BucketRow(BaseModel):
    """One context-length bucket of one run."""

    bucket: str
    items: int
    ttft_p50: float | None
    ttft_p95: float | None
    per_token_p50: float | None
    per_token_p95: float | None
    decode_tps_p50: float | None
    decode_tps_p95: float | None


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
    # per-generation timing: medians and 95th percentiles
    batch_size: int | None = None
    items_per_second: float | None = None
    ttft_p50: float | None = None
    ttft_p95: float | None = None
    per_token_p50: float | None = None
    per_token_p95: float | None = None
    decode_tps_p50: float | None = None
    decode_tps_p95: float | None = None
    decode_throughput: float | None = None  # aggregate decode tokens/s at the run's batch size
    # against the baseline (None for the baseline itself or without an honest claim)
    ttft_speedup: float | None = None
    ttft_speedup_low: float | None = None
    ttft_speedup_high: float | None = None
    decode_speedup: float | None = None
    decode_speedup_low: float | None = None
    decode_speedup_high: float | None = None
    # memory
    peak_memory_bytes: int | None = None
    peak_memory_kind: str | None = None  # what the peak measures, in words
    memory_saved_bytes: int | None = None
    kv_bytes_per_token: float | None = None
    kv_bytes_at_longest: int | None = None
    kv_longest_tokens: int | None = None
    # accuracy beside it
    accuracy_ci_low_points: float | None = None
    accuracy_ci_high_points: float | None = None
    speed_only: bool = False
    # capacity
    requests_per_second_per_device: float | None = None
    devices_needed: int | None = None
    buckets: list[BucketRow] = PydField(default_factory=list)


class SpeedTable(BaseModel):
    rows: list[SpeedRow]
    spread_note: str = SPREAD_NOTE
    capacity_note: str | None = None
    output_tokens: float | None = None


def method_label(manifest: dict[str, Any]) -> str:
    """The accelerations with their main settings, e.g. "kv_cache (int4 quanto)", each as its method labels itself."""
    return accel.method_label((manifest.get("config") or {}).get("acceleration") or {})


def effects_facts(manifest: dict[str, Any]) -> list[str]:
    """What each acceleration measured, as the short facts its method chooses for a headline."""
    return accel.headlines(manifest.get("effects") or {})


def _memory_kind(peak: PeakMemory) -> str:
    what = "CUDA max allocated" if peak.kind == "cuda_max_allocated" else "process peak RSS"
    return what + ("" if peak.scope == "run" else " (process lifetime)")


def _row(run: Any, role: str) -> SpeedRow:
    m: RunManifest = run.manifest
    gens = list(run.generations.values())
    fig = speed.timing_figures(gens)
    peak = m.speed.peak_memory if m.speed else None
    kv = m.speed.kv_cache if m.speed else None
    buckets = [BucketRow(bucket=b["bucket"], items=b["items"],
                         ttft_p50=b["ttft_seconds"]["p50"], ttft_p95=b["ttft_seconds"]["p95"],
                         per_token_p50=b["decode_seconds_per_token"]["p50"],
                         per_token_p95=b["decode_seconds_per_token"]["p95"],
                         decode_tps_p50=b["decode_tokens_per_second"]["p50"],
                         decode_tps_p95=b["decode_tokens_per_second"]["p95"]) for b in speed.by_bucket(gens)]
    as_written = m.to_dict()  # the label and effects functions read the manifest as written
    return SpeedRow(
        run=run.name, role=role, method=method_label(as_written), device=m.device or "", dtype=m.dtype or "",
        items_timed=speed.run_timing(run)[0], speed_note=None, accuracy_delta_points=None, harmful_flips=None,
        load_seconds=m.load_seconds, effects=effects_facts(as_written),
        batch_size=fig["batch_size_max"], items_per_second=fig["items_per_second"],
        ttft_p50=fig["ttft_seconds"]["p50"], ttft_p95=fig["ttft_seconds"]["p95"],
        per_token_p50=fig["decode_seconds_per_token"]["p50"], per_token_p95=fig["decode_seconds_per_token"]["p95"],
        decode_tps_p50=fig["decode_tokens_per_second"]["p50"], decode_tps_p95=fig["decode_tokens_per_second"]["p95"],
        decode_throughput=fig["decode_throughput_tokens_per_second"],
        peak_memory_bytes=peak.bytes if peak else None, peak_memory_kind=_memory_kind(peak) if peak else None,
        kv_bytes_per_token=kv.bytes_per_token if kv else None,
        kv_bytes_at_longest=kv.bytes_at_longest_context if kv else None,
        kv_longest_tokens=kv.longest_context_tokens if kv else None,
        buckets=buckets,
    )


def _paired(base: Any, cand: Any, value: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per item timed in both runs: (baseline value, candidate value)."""
    b_vals, c_vals = [], []
    for item_id, bg in sorted(base.generations.items()):  # by id: the same runs give the same interval
        cg = cand.generations.get(item_id)
        if cg is None:
            continue
        b, c = value(bg), value(cg)
        if b is not None and c is not None:
            b_vals.append(b)
            c_vals.append(c)
    return np.asarray(b_vals, dtype=float), np.asarray(c_vals, dtype=float)


def _accuracy(comp: Any) -> tuple[float | None, float | None, float | None, bool]:
    """(delta, CI low, CI high) in points over the packs that score fields, and whether none does."""
    scored = [pc for pc in comp.packs if not pc.speed_only]
    if not scored:
        return None, None, None, bool(comp.packs)
    b_ok: list[bool] = []
    c_ok: list[bool] = []
    for pc in scored:
        b, c = pc.correctness()
        b_ok += b
        c_ok += c
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
    iv = stats.bootstrap_ratio_of_medians(*_paired(base, run, speed.ttft), n_resamples=BOOTSTRAP_RESAMPLES)
    if iv is not None:
        row.ttft_speedup, row.ttft_speedup_low, row.ttft_speedup_high = iv.delta, iv.low, iv.high
    b_tps, c_tps = _paired(base, run, speed.decode_tokens_per_second)
    iv = stats.bootstrap_ratio_of_medians(c_tps, b_tps, n_resamples=BOOTSTRAP_RESAMPLES)
    if iv is not None:
        row.decode_speedup, row.decode_speedup_low, row.decode_speedup_high = iv.delta, iv.low, iv.high
    bp = (bm.speed.peak_memory if bm.speed else None) or PeakMemory()
    cp = (m.speed.peak_memory if m.speed else None) or PeakMemory()
    if bp.scope == cp.scope == "run" and bp.kind == cp.kind and bp.bytes is not None and cp.bytes is not None:
        row.memory_saved_bytes = bp.bytes - cp.bytes


def speed_table(report: Any, inputs: capacity.CapacityInputs | None = None) -> SpeedTable:
    """The table for a `CompareReport` (evals.api): baseline first, then the A/A repeat and the candidates."""
    inputs = inputs or capacity.CapacityInputs()
    base = report.baseline
    base_row = _row(base, "baseline")
    rows = [base_row]
    extra = [(c, comp, "candidate") for c, comp in zip(report.candidates, report.comparisons)]
    if report.noise_floor is not None and report.noise_floor_run is not None:
        extra.insert(0, (report.noise_floor_run, report.noise_floor, "repeat (A/A)"))
    all_speed_only = True
    for run, comp, role in extra:
        row = _row(run, role)
        row.accuracy_delta_points, row.accuracy_ci_low_points, row.accuracy_ci_high_points, row.speed_only = \
            _accuracy(comp)
        all_speed_only &= row.speed_only
        row.harmful_flips = len(comp.harmful)
        _claim_against(row, base_row, base, run)
        rows.append(row)
    base_row.speed_only = bool(extra) and all_speed_only

    mean_out = speed.timing_figures(base.generations.values())["mean_new_tokens"]
    output_tokens = inputs.output_tokens or mean_out
    note = None
    if output_tokens:
        for row in rows:
            if row.decode_throughput and (row.role == "baseline" or row.speed_note is None):
                est = capacity.estimate(row.decode_throughput, output_tokens, inputs)
                row.requests_per_second_per_device, row.devices_needed = est.requests_per_second, est.devices
        note = capacity.assumptions(inputs, output_tokens, base_row.batch_size, base_row.device)
    spread = SPREAD_NOTE
    timed_now = [run.name for run, _comp, _role in extra if not getattr(run, "reused", True)]
    if getattr(base, "reused", False) and timed_now:
        sessions = base.manifest.sessions
        finished = (sessions[-1].finished if sessions else None) or "an earlier session"
        spread += (f" The baseline's timings are stored from {finished}, while {', '.join(timed_now)} ran now: "
                   "the ratios compare two states of the machine; pass --fresh for speed claims.")
    other_batch = [f"{r.run} (batch {r.batch_size})" for r in rows[1:]
                   if r.batch_size and base_row.batch_size and r.batch_size != base_row.batch_size]
    if other_batch:
        spread += (f" {', '.join(other_batch)} ran at another batch size than the baseline ({base_row.batch_size}): "
                   "its speedups are per-sequence latency at that batch; throughput is in req/s per device.")
    return SpeedTable(rows=rows, spread_note=spread, capacity_note=note, output_tokens=output_tokens)
