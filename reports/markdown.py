"""A Markdown summary for a GitHub step summary or a PR comment: the verdict,
a per-pack table, the failing rules and the top harmful flips.

GitHub renders HTML inside Markdown, so model text is HTML-escaped and table
metacharacters are neutralised: a model's answer cannot inject markup here.
"""

from __future__ import annotations

import html

from evalrun.evals.pairing import Comparison
from evalrun.evals.speed_table import SPEED_ONLY, SpeedTable
from evalrun.evals.verdict import STATUS_TEXT, Verdict, overall_status
from evalrun.reports import units
from evalrun.reports.summary import rule_text

TOP_FLIPS = 10
_ICON = {"pass": "✅", "fail": "❌", "incomplete": "⚠️"}


def _cell_status(status: str) -> str:
    return "pass" if status == "pass" else f"**{STATUS_TEXT[status]}**"


def md_cell(text: object, width: int = 60) -> str:
    flat = " ".join(str(text).split()) if text is not None else "∅"
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return html.escape(flat).replace("|", "&#124;").replace("`", "&#96;").replace("*", "&#42;")


def render_speed_markdown(table: SpeedTable) -> list[str]:
    """The speed-accuracy table and what its figures assume."""
    lines = ["### Speed vs accuracy", "",
             "| run | acceleration | TTFT p50 | TTFT speedup | decode tok/s p50 | decode speedup | peak memory | "
             "memory saved | KV / token | accuracy delta (95% CI) | req/s / device | devices |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in table.rows:
        base = r.role == "baseline"
        claim = r.speed_note if r.speed_note and not base else None
        if base:
            ttft = "1.00×" if r.ttft_p50 is not None else "–"
            dec = "1.00×" if r.decode_tps_p50 is not None else "–"
        else:
            ttft = claim or units.ratio(r.ttft_speedup, r.ttft_speedup_low, r.ttft_speedup_high)
            dec = claim or units.ratio(r.decode_speedup, r.decode_speedup_low, r.decode_speedup_high)
        if base:
            acc = SPEED_ONLY if r.speed_only else "baseline"
        else:
            acc = SPEED_ONLY if r.speed_only else units.delta_points(
                r.accuracy_delta_points, r.accuracy_ci_low_points, r.accuracy_ci_high_points)
        saved = "–" if base or claim else units.size(r.memory_saved_bytes, signed=True)
        lines.append(
            f"| {md_cell(r.run)} | {md_cell(r.method)} | {units.seconds(r.ttft_p50)} | {md_cell(ttft, 80)} | "
            f"{units.rate(r.decode_tps_p50)} | {md_cell(dec, 80)} | {units.size(r.peak_memory_bytes)} | {saved} | "
            f"{units.size(r.kv_bytes_per_token)} | {md_cell(acc)} | "
            f"{units.rate(r.requests_per_second_per_device, 2) if r.requests_per_second_per_device else '–'} | "
            f"{r.devices_needed if r.devices_needed is not None else '–'} |")
    lines += ["", md_cell(table.spread_note, 1000)]
    if table.capacity_note:
        lines += ["", md_cell(table.capacity_note, 1000)]
    return lines + [""]


def render_markdown(comparisons: list[Comparison], verdicts: list[Verdict], noise_floor: Comparison | None = None,
                    speed: SpeedTable | None = None) -> str:
    status = overall_status(verdicts)
    lines = [f"## evalrun: {_ICON[status]} {STATUS_TEXT[status]}", ""]
    lines += [f"- **{md_cell(v.candidate)}**: {_cell_status(v.status)} ({v.summary()})" for v in verdicts]
    lines.append("")
    if status == "incomplete":
        lines += ["Nothing failed, but the data does not cover every item the candidates asked for: "
                  "this is not a pass.", ""]
    if noise_floor is not None:
        aa = sum(pc.harmful_items for pc in noise_floor.packs)
        lines += [f"Noise floor (baseline vs itself): {aa} harmful flip(s), "
                  f"{sum(pc.identical_outputs for pc in noise_floor.packs)}/"
                  f"{sum(pc.n for pc in noise_floor.packs)} identical outputs.", ""]
    for comparison, verdict in zip(comparisons, verdicts):
        lines += [f"### {md_cell(comparison.candidate)} vs {md_cell(comparison.baseline)}", "",
                  "| pack | items | baseline | candidate | delta (95% CI) | McNemar p | harmful | identical | verdict |",
                  "|---|---:|---:|---:|---|---:|---:|---:|---|"]
        for pc in comparison.packs:
            mark = _cell_status(verdict.pack_status(pc.pack))
            if pc.speed_only:
                lines.append(f"| {md_cell(pc.pack)} | {pc.n} | {SPEED_ONLY} | {SPEED_ONLY} | – | – | – | "
                             f"{100 * pc.agreement:.0f}% | {mark} |")
                continue
            ci = p = ""
            if pc.stats:
                ci = f" [{100 * pc.stats.interval.low:+.1f}, {100 * pc.stats.interval.high:+.1f}]"
                p = f"{pc.stats.paired.p_value:.3g}"
            lines.append(
                f"| {md_cell(pc.pack)} | {pc.n} | {100 * pc.baseline_accuracy:.1f}% | {100 * pc.candidate_accuracy:.1f}% | "
                f"{pc.delta_points:+.1f}{ci} | {p} | {pc.harmful_items} | {100 * pc.agreement:.0f}% | "
                f"{mark} |"
            )
        lines.append("")
        if verdict.failed:
            lines.append("Failing rules:")
            lines += [f"- {md_cell(r.pack)}: {md_cell(rule_text(r), 200)}" for r in verdict.failed]
            lines.append("")
        if verdict.gaps or verdict.unevaluated:
            lines.append("Not vouched for:")
            lines += [f"- {md_cell(g.pack)}: {md_cell(g.reason, 400)}" for g in verdict.gaps]
            lines += [f"- {md_cell(r.pack)}: {md_cell(rule_text(r), 200)}" for r in verdict.unevaluated]
            lines.append("")
        flips = comparison.harmful
        if flips:
            lines += [f"Top harmful flips ({min(len(flips), TOP_FLIPS)} of {len(flips)}):", "",
                      "| item | field | gold | candidate | code |", "|---|---|---|---|---|"]
            for f in flips[:TOP_FLIPS]:
                lines.append(f"| {md_cell(f.item_id)} | {md_cell(f.field)} | {md_cell(f.gold, 30)} | "
                             f"{md_cell(f.candidate_value)} | {md_cell(f.subcode or f.candidate_outcome)} |")
            lines.append("")
        for note in verdict.notes:
            lines.append(f"> note: {md_cell(note, 300)}")
        if verdict.notes:
            lines.append("")
    if speed is not None:
        lines += render_speed_markdown(speed)
    return "\n".join(lines) + "\n"
