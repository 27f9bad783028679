"""The HTML report's speed pictures: the speed-accuracy scatter (a point per candidate and pack, the gate's
region shaded) and the TTFT/TPOT distributions of each run."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from evalrun.evals.speed import SpeedTable
from evalrun.evals.timing import pair_timings, speedup
from evalrun.reports.charts import DistributionSeries, GateRegion, ScatterPoint, latency_distribution, speed_accuracy_scatter

SCATTER_METRIC = "e2el_p50"


def _region(gate: Any, pack: str) -> GateRegion:
    """Where this pack's gate passes: the least `min_speedup` on SCATTER_METRIC, and -max_drop."""
    bounds = [r.min_speedup.value for r in gate.speed if r.min_speedup is not None
              and r.min_speedup.metric == SCATTER_METRIC and r.min_speedup.pack in (None, pack)]
    rule = gate.pack_rule(pack)
    drop = rule.max_drop if rule.max_drop is not None else rule.non_inferiority
    return GateRegion(min_speedup=max(bounds) if bounds else None, max_drop=drop)


def scatter(report: Any) -> Markup | None:
    """Speedup (E2EL p50, baseline / candidate) against the accuracy delta, per candidate and pack."""
    points: list[ScatterPoint] = []
    regions: list[GateRegion] = []
    for cand in report.candidates:
        run, comp, verdict, gate = cand.run, cand.comparison, cand.verdict, cand.gate
        if run.manifest.emulated or (run.manifest.device, run.manifest.dtype) != (
                report.baseline.manifest.device, report.baseline.manifest.dtype):
            continue  # no honest speed claim: no point on a speed axis
        b_gens, c_gens, basis = pair_timings(report.baseline, run)
        for pc in comp.packs:
            if pc.speed_only or pc.stats is None:
                continue
            sp = speedup(b_gens, c_gens, SCATTER_METRIC, pc.item_ids, basis=basis)
            if sp is None:
                continue
            iv = pc.stats.interval
            points.append(ScatterPoint(f"{run.name} · {pc.pack}", sp.value, sp.low, sp.high, pc.delta_points,
                                       100 * iv.low, 100 * iv.high, verdict.pack_status(pc.pack)))
            regions.append(_region(gate, pc.pack))
    if not points:
        return None
    same = all(r == regions[0] for r in regions)
    return speed_accuracy_scatter(
        points, regions[0] if same else None,
        "E2EL p50 speedup (baseline / candidate, ×, 95% interval)",
        "accuracy delta (points, candidate − baseline, 95% interval)",
        "Speed against accuracy, per candidate and pack" + ("" if same else " (packs' gates differ: region not shaded)"))


def distributions(table: SpeedTable) -> list[Markup]:
    """TTFT and TPOT per run, with p50/p95/p99 marked."""
    out = []
    for metric, title in (("ttft", "TTFT (time to first token)"), ("tpot", "TPOT (time per output token)")):
        series = [DistributionSeries(r.run, r.samples.get(metric, []),
                                     {q: v for q in ("p50", "p95", "p99")
                                      if (v := (r.metrics.get(metric) or {}).get(q)) is not None})
                  for r in table.rows if r.samples.get(metric)]
        if series:
            out.append(latency_distribution(series, title, f"{title}: distribution per run"))
    return out


def pictures(report: Any, table: SpeedTable) -> list[Markup]:
    """Every speed picture of a comparison, in the order the page shows them."""
    out = [p for p in [scatter(report)] if p is not None]
    return out + distributions(table)
