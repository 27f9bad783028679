"""`build_view(report)`: the one view model every report renders (model.py), from a `CompareReport`."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from evalrun.evals.speed import CapacityInputs, EMULATED_NOTE, SpeedTable, speed_table
from evalrun.evals.compare import Comparison
from evalrun.evals.gate import Verdict, overall_exit_code, overall_status
from evalrun.reports.view.pictures import pictures
from evalrun.reports.view.browser import MAX_TEXT_BYTES, browser_data, listed_flips
from evalrun.reports.view.heatmaps import heatmaps, kl_heatmap, length_kl_map
from evalrun.reports.view.model import OUTCOMES, CandidateSection, HeatmapSet, KLMap, PackRow, ReportView, RunInfo
from evalrun.reports.view.tables import field_rows, noise_floor, pack_row, run_info

if TYPE_CHECKING:
    from evalrun.evals.api import CompareReport, PairedRun

__all__ = ["EMULATED_NOTE", "OUTCOMES", "CandidateSection", "PackRow", "ReportView", "RunInfo", "build_view",
           "comparisons_view", "with_page"]


def _section(report: CompareReport, paired: PairedRun, role: str) -> CandidateSection:
    """A candidate's section, or the noise floor's (no verdict)."""
    verdict = getattr(paired, "verdict", None)
    aa = {pc.pack: pc for pc in report.noise_floor.comparison.packs} if report.noise_floor and verdict else {}
    comp = paired.comparison
    return CandidateSection(
        name=paired.name, comparison=comp, verdict=verdict, info=run_info(paired.run, role, report.baseline),
        packs=[pack_row(pc, verdict, aa.get(pc.pack)) for pc in comp.packs],
        fields=field_rows(comp),
        drift=paired.drift,
    )


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
    view = ReportView(
        title=title or f"evalrun: {', '.join(c.name for c in report.candidates)} vs {base_name}",
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        status=report.status, exit_code=report.exit_code,
        baseline=run_info(report.baseline, "baseline"), sections=sections,
        speed_table=speed or speed_table(report, capacity),
        noise_floor=noise_floor(floor.comparison if floor else None), noise_section=noise_section,
        stability=stability_dict(report.stability), drift_note=report.drift_note,
    )
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
