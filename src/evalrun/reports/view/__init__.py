"""`build_view(report)`: the one view model every report renders (model.py), from a `CompareReport`, with
the speed pictures (docs/speed.md). Every table's figure is on the paired items (both runs answered), so the
pack table, the field table and the verdict speak about the same items.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from evalrun.evals.speed import CapacityInputs, EMULATED_NOTE, SpeedTable, effects_facts, method_label, speed_table
from evalrun.evals.compare import Comparison, PackComparison
from evalrun.evals.gate import Verdict, overall_exit_code, overall_status
from evalrun.evals.results import RunResult
from evalrun.evals.timing import pair_timings, speedup
from evalrun.reports.charts import (
    DistributionSeries, GateRegion, ScatterPoint, latency_distribution, speed_accuracy_scatter,
)
from evalrun.reports.view.browser import MAX_TEXT_BYTES, browser_data, listed_flips
from evalrun.reports.view.heatmaps import heatmaps, kl_heatmap, length_kl_map
from evalrun.reports.view.model import (
    OUTCOMES, CandidateSection, FieldRow, HeatmapSet, KLMap, NoiseFloor, PackRow, ReportView, RunInfo,
)

if TYPE_CHECKING:
    from evalrun.evals.api import CompareReport, PairedRun

__all__ = ["EMULATED_NOTE", "OUTCOMES", "CandidateSection", "PackRow", "ReportView", "RunInfo", "build_view",
           "comparisons_view", "with_page"]


def _section(report: CompareReport, paired: PairedRun, role: str) -> CandidateSection:
    """A candidate's section, or the noise floor's (no verdict)."""
    verdict = getattr(paired, "verdict", None)
    aa = {pc.pack: pc for pc in report.noise_floor.comparison.packs} if report.noise_floor and verdict else {}
    comp = paired.comparison
    return CandidateSection(name=paired.name, comparison=comp, verdict=verdict,
                            info=run_info(paired.run, role, report.baseline),
                            packs=[pack_row(pc, verdict, aa.get(pc.pack)) for pc in comp.packs],
                            fields=field_rows(comp), drift=paired.drift)


def _page_section(report: CompareReport, paired: PairedRun, section: CandidateSection) -> CandidateSection:
    base_scored, cand_scored, run = report.baseline_scored, paired.scored, paired.run
    comp, drift = section.comparison, section.drift
    sets: list[HeatmapSet] = []
    kl_maps: list[KLMap] = []
    for pc in comp.packs:
        hs = heatmaps(pc.pack, base_scored, cand_scored, run.name, report.baseline.name)
        if hs is not None:
            hs.kl = kl_heatmap(pc.pack, base_scored, cand_scored, drift) if drift is not None else None
            sets.append(hs)
        elif drift is not None and (m := length_kl_map(pc.pack, base_scored, cand_scored, drift)) is not None:
            kl_maps.append(m)
    return dataclasses.replace(section, heatmaps=sets, kl_maps=kl_maps,
                               flips=listed_flips(comp, base_scored, cand_scored, section.verdict))


def build_view(report: CompareReport, title: str | None = None, speed: SpeedTable | None = None,
               capacity: CapacityInputs | None = None, html: bool = True,
               max_text_bytes: int = MAX_TEXT_BYTES) -> ReportView:
    """The view of a `CompareReport`; `speed`: the speed table when already computed; `html`: also
    the page-only parts (heatmaps, the item browser), which the text renderers do not need."""
    base_name = report.baseline.name
    sections = [_section(report, c, "candidate") for c in report.candidates]
    floor = report.noise_floor
    noise_section = _section(report, floor, "repeat (A/A)") if floor is not None else None
    view = ReportView(title=title or f"evalrun: {', '.join(c.name for c in report.candidates)} vs {base_name}",
                      created=datetime.now(timezone.utc).isoformat(timespec="seconds"), status=report.status,
                      exit_code=report.exit_code, baseline=run_info(report.baseline, "baseline"), sections=sections,
                      speed_table=speed or speed_table(report, capacity),
                      noise_floor=noise_floor(floor.comparison if floor else None), noise_section=noise_section,
                      stability=stability_dict(report.stability), drift_note=report.drift_note,
                      control=run_info(report.control.run, "control", report.baseline) if report.control else None)
    return with_page(view, report, max_text_bytes) if html else view


def with_page(view: ReportView, report: CompareReport, max_text_bytes: int = MAX_TEXT_BYTES) -> ReportView:
    """A copy of `view` with the page-only parts (heatmaps, the listed flips, the item browser,
    the pictures), built apart from the rest so that a failure there costs the HTML page alone."""
    browser, blob, cut = browser_data(report, max_text_bytes)
    return dataclasses.replace(
        view, sections=[_page_section(report, c, s) for c, s in zip(report.candidates, view.sections)],
        browser=browser, texts_blob=blob, texts_cut=cut, pictures=pictures(report, view.speed_table))


def stability_dict(stab: Any) -> dict[str, Any] | None:
    """The baseline's replicates as every renderer states them (None: no replicates beyond it)."""
    if stab is None or not stab.measured:
        return None
    flips, trials = sum(stab.aa_flips.values()), sum(stab.aa_trials.values())
    return {"replicates": stab.replicates, "fields": stab.fields, "unstable": len(stab.unstable),
            "stable_right": len(stab.stable_right), "aa_flips": flips, "aa_trials": trials,
            "unstable_fields": [{"item_id": i, "field": f} for i, f in sorted(stab.unstable)],
            "summary": stab.summary()}


def comparisons_view(comparisons: list[Comparison], verdicts: list[Verdict],
                     noise: Comparison | None = None) -> ReportView:
    """The view of bare comparisons (no runs behind them: no per-field table, no speed), for
    callers that gate pairings they made themselves."""
    aa = {pc.pack: pc for pc in noise.packs} if noise else {}
    sections = [CandidateSection(name=c.candidate, comparison=c, verdict=v, info=RunInfo(c.candidate, "candidate", ""),
                                 packs=[pack_row(pc, v, aa.get(pc.pack)) for pc in c.packs], fields=[])
                for c, v in zip(comparisons, verdicts)]
    base = comparisons[0].baseline if comparisons else "baseline"
    return ReportView(title=f"evalrun: vs {base}", created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      status=overall_status(verdicts), exit_code=overall_exit_code(verdicts),
                      baseline=RunInfo(base, "baseline", ""), sections=sections, speed_table=SpeedTable(rows=[]),
                      noise_floor=noise_floor(noise))


def _pct(x: float) -> float:
    return 100.0 * x


def run_info(run: RunResult, role: str, baseline: RunResult | None = None) -> RunInfo:
    m = run.manifest
    as_written = m.to_dict()  # the label and effects functions read the manifest as written
    return RunInfo(name=run.name, role=role, dir=str(run.dir),
                   model=(m.model.spec if m.model else None) or m.config.model or "", device=m.device or "",
                   dtype=m.dtype or "",
                   method=method_label(as_written, baseline.manifest.to_dict() if baseline is not None else None),
                   emulated=list(m.emulated), effects=effects_facts(as_written), items=len(run.items))


def _detail(pc: PackComparison) -> dict[str, Any]:
    """What the JSON adds beside the table's figures."""
    st = pc.stats
    out: dict[str, Any] = {
        "baseline_micro_f1": pc.baseline_f1, "candidate_micro_f1": pc.candidate_f1,
        "f1_delta_points": pc.f1_delta_points,
        "first_divergent_token": sorted(pc.first_divergence),
        "transitions": [{"baseline": b, "candidate": c, "fields": n} for (b, c), n in sorted(pc.transitions.items())],
        "breakdowns": [
            {"dimension": b.dimension, "value": b.value, "items": b.n,
             "baseline_accuracy": b.baseline_accuracy, "candidate_accuracy": b.candidate_accuracy}
            for b in sorted(pc.breakdowns.values(), key=lambda b: (b.dimension, b.value))
        ],
    }
    if st:
        out["statistics"] = {
            "discordant_baseline_only": st.paired.b, "discordant_candidate_only": st.paired.c,
            "mcnemar_midp": st.paired.p_value,
            "accuracy_delta_ci_points": [_pct(st.interval.low), _pct(st.interval.high)],
            "micro_f1_delta_ci_points": [_pct(st.f1_interval.low), _pct(st.f1_interval.high)],
            "confidence": st.interval.confidence, "bootstrap_resamples": st.interval.n_resamples,
            "min_detectable_difference_points": _pct(st.mde), "mcnemar_midp_by_field_type": st.by_kind_p,
        }
    return out


def pack_row(pc: PackComparison, verdict: Verdict | None, aa: PackComparison | None) -> PackRow:
    st = pc.stats
    return PackRow(pack=pc.pack, n=pc.n, baseline_accuracy=pc.baseline_accuracy,
                   candidate_accuracy=pc.candidate_accuracy, delta_points=pc.delta_points,
                   ci_low_points=_pct(st.interval.low) if st else None,
                   ci_high_points=_pct(st.interval.high) if st else None,
                   confidence=st.interval.confidence if st else None, p_value=st.paired.p_value if st else None,
                   mde_points=_pct(st.mde) if st and st.mde is not None else None, harmful_flips=len(pc.harmful),
                   harmful_items=pc.harmful_items, helpful_items=pc.helpful_items, errors=pc.errors,
                   identical_outputs=pc.identical_outputs, agreement=pc.agreement,
                   first_divergence=tuple(sorted(pc.first_divergence)), aa_harmful=aa.harmful_items if aa else None,
                   status=verdict.pack_status(pc.pack) if verdict else None, speed_only=pc.speed_only,
                   detail=_detail(pc), recovery=pc.recovery,
                   recovery_low=st.recovery.low if st and st.recovery else None,
                   recovery_high=st.recovery.high if st and st.recovery else None)


def field_rows(comparison: Comparison) -> list[FieldRow]:
    return [row for pc in comparison.packs for row in pc.fields]


def noise_floor(nf: Comparison | None) -> NoiseFloor | None:
    if nf is None:
        return None
    return NoiseFloor(run=nf.candidate, harmful_items=sum(pc.harmful_items for pc in nf.packs),
                      identical_outputs=sum(pc.identical_outputs for pc in nf.packs),
                      items=sum(pc.n for pc in nf.packs))


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
        "Speed against accuracy, per candidate and pack"
        + ("" if same else " (packs' gates differ: region not shaded)"))


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
