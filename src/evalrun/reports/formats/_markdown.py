"""A Markdown summary for a GitHub step summary or a PR comment. GitHub renders HTML inside Markdown, so
model text is HTML-escaped and a newline or a pipe in it cannot break a table; each cell and the whole
document are neutralised (reports.text).
"""

from __future__ import annotations

import html

from evalrun.evals.compare import Comparison
from evalrun.evals.speed import SPEED_ONLY, SpeedTable
from evalrun.evals.gate import INCOMPLETE_NOTE, STATUS_TEXT, Verdict, overall_summary
from evalrun.reports.text import drift_text, rule_text, safe_text, units
from evalrun.reports.view import comparisons_view
from evalrun.reports.view.model import CandidateSection, ReportView

TOP_FLIPS = 10
_ICON = {"pass": "✅", "fail": "❌", "incomplete": "⚠️"}


def _cell_status(status: str) -> str:
    return "pass" if status == "pass" else f"**{STATUS_TEXT[status]}**"


def md_cell(text: object, width: int = 60) -> str:
    """One value on one line of Markdown: whitespace collapsed, clipped, HTML and table syntax escaped."""
    text = safe_text(html.escape(units.flat_clip(text, width)))
    return text.replace("|", "&#124;").replace("`", "&#96;").replace("*", "&#42;")


def render_speed_markdown(table: SpeedTable) -> list[str]:
    """The speed-accuracy table (latency p50 / p99) and what its figures assume."""
    served = any(r.server_timings is not None for r in table.rows)  # the engine's own clock, beside the client's
    lines = ["### Speed vs accuracy", "",
             "| run | acceleration | load | TTFT | TTFT speedup | TPOT | TPOT speedup | "
             + ("server TTFT / TPOT (mean) | " if served else "") + "E2EL | req/s | goodput | "
             "peak memory | memory saved | KV / token | accuracy delta (95% CI) | devices |",
             "|---|---|---|---:|---:|---:|---:|" + ("---:|" if served else "")
             + "---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in table.rows:
        acc = "baseline" if r.role == "baseline" and not r.speed_only else units.accuracy_cell(r)
        lines.append(
            f"| {md_cell(r.run)} | {md_cell(r.method)} | {units.load_cell(r)} | "
            f"{units.latency_cell(r.metrics, 'ttft')} | "
            f"{md_cell(units.speedup_cell(r, 'ttft_p50'), 80)} | {units.latency_cell(r.metrics, 'tpot')} | "
            f"{md_cell(units.speedup_cell(r, 'tpot_p50'), 80)} | " + (f"{units.server_cell(r)} | " if served else "")
            + f"{units.latency_cell(r.metrics, 'e2el')} | "
            f"{units.rate(r.request_throughput, 2)} | {md_cell(units.goodput_cell(r.goodput))} | "
            f"{units.size(r.peak_memory_bytes)} | {units.memory_saved_cell(r)} | {units.size(r.kv_bytes_per_token)} | "
            f"{md_cell(acc)} | {r.devices_needed if r.devices_needed is not None else '–'} |")
    lines += [x for r in table.rows if r.engine for x in ("", md_cell(f"{r.run} {r.engine}", 1000))]
    lines += ["", md_cell(table.spread_note, 1000)]
    lines += ["", md_cell(table.server_note, 1000)] if table.server_note else []
    lines += ["", md_cell(units.definitions_note(table), 1000)]
    if table.capacity_note:
        lines += ["", md_cell(table.capacity_note, 1000)]
    return lines + [""]


def _pack_lines(section: CandidateSection) -> list[str]:
    lines = ["| pack | items | baseline | candidate | delta (95% CI) | recovery | McNemar mid-p | harmful | identical | "
             "1st diff token | verdict |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    for p in section.packs:
        mark = _cell_status(p.status or "pass")
        first = units.divergence_cell(p.first_divergence, p.identical_outputs, p.n)
        if p.speed_only:
            lines.append(f"| {md_cell(p.pack)} | {p.n} | {SPEED_ONLY} | {SPEED_ONLY} | – | – | – | – | "
                         f"{units.pct(p.agreement, 0)} | {first} | {mark} |")
            continue
        lines.append(
            f"| {md_cell(p.pack)} | {p.n} | {units.pct(p.baseline_accuracy)} | {units.pct(p.candidate_accuracy)} | "
            f"{units.num(p.delta_points, 1, True)} {units.ci(p.ci_low_points, p.ci_high_points)} | "
            f"{units.pct(p.recovery)} | {units.p_value(p.p_value)} | {p.harmful_items} | {units.pct(p.agreement, 0)} | "
            f"{first} | {mark} |")
    return lines + [""]


def _drift_lines(section: CandidateSection) -> list[str]:
    """Teacher-forced drift per pack (evals/drift/_drift.py), with what could not be measured."""
    drift = section.drift
    if drift is None:
        return []
    lines = [f"Drift of {md_cell(section.name)} on the baseline's answers (teacher-forced, per token):", "",
             "| " + " | ".join(drift_text.HEADERS) + " |", "|---|" + "---:|" * (len(drift_text.HEADERS) - 1)]
    lines += ["| " + " | ".join(md_cell(c, 80) for c in cells) + " |" for cells in drift_text.rows(drift)]
    lines += [""] + [f"> note: {md_cell(n, 300)}" for n in drift_text.notes(drift)]
    return lines + [""]


def _verdict_lines(section: CandidateSection) -> list[str]:
    verdict = section.verdict
    lines: list[str] = []
    if verdict is None:
        return lines
    gaps = [f"- {md_cell(g.pack)}: {md_cell(g.reason, 400)}" for g in verdict.gaps]
    for heading, before, rules in (("Failing rules:", [], verdict.failed),
                                   ("Not vouched for:", gaps, verdict.unevaluated),
                                   ("Not testable here (the baseline got none of what the rule looks at right):", [],
                                    verdict.untestable)):
        if before or rules:
            lines += [heading, *before, *(f"- {md_cell(r.pack)}: {md_cell(rule_text(r), 400)}" for r in rules), ""]
    flips = section.comparison.harmful
    drift = section.drift
    if flips:
        lines += [f"Top harmful flips ({min(len(flips), TOP_FLIPS)} of {len(flips)}):", "",
                  "| item | field | gold | candidate | code | gate |" + (" drift |" if drift else ""),
                  "|---|---|---|---|---|---|" + ("---|" if drift else "")]
        for f in flips[:TOP_FLIPS]:
            lines.append(f"| {md_cell(f.item_id)} | {md_cell(f.field)} | {md_cell(f.gold, 30)} | "
                         f"{md_cell(f.candidate_value)} | {md_cell(f.subcode or f.candidate_outcome)} | "
                         f"{md_cell(units.flip_status(f, verdict) or 'counted')} |"
                         + (f" {md_cell(drift_text.flip_text(drift, f) or '–', 120)} |" if drift else ""))
        lines.append("")
    lines += [f"> note: {md_cell(note, 300)}" for note in verdict.notes]
    if verdict.notes:
        lines.append("")
    return lines


def render_markdown(view: ReportView | list[Comparison], verdicts: list[Verdict] | None = None) -> str:
    """The summary of a view (or of bare comparisons with their verdicts)."""
    if not isinstance(view, ReportView):
        view = comparisons_view(view, verdicts or [])
    status = view.status
    lines = [f"## evalrun: {_ICON[status]} {STATUS_TEXT[status]} ({overall_summary(view.verdicts)})", ""]
    lines += [f"- **{md_cell(v.candidate)}**: {_cell_status(v.status)} ({v.summary()})" for v in view.verdicts]
    lines.append("")
    if status == "incomplete":
        lines += [INCOMPLETE_NOTE, ""]
    if view.noise_floor is not None:
        lines += [md_cell(view.noise_floor.sentence, 400), ""]
    if view.noise_section is not None:
        lines += _drift_lines(view.noise_section)
    if view.drift_note:
        lines += [f"> note: {md_cell(view.drift_note, 300)}", ""]
    for section in view.sections:
        lines += [f"### {md_cell(section.comparison.candidate)} vs {md_cell(section.comparison.baseline)}", ""]
        lines += _pack_lines(section)
        lines += _drift_lines(section)
        lines += _verdict_lines(section)
    if view.speed_table.rows:
        lines += render_speed_markdown(view.speed_table)
    return safe_text("\n".join(lines) + "\n")
