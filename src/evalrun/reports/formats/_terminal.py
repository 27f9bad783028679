"""The terminal rendering of runs and comparisons: tables, the flipped fields,
the verdict. Model text is shown escaped (rich markup in it stays inert)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evalrun.evals.scoring import PackMetrics
from evalrun.evals.speed import SPEED_ONLY, SpeedTable
from evalrun.evals.gate import STATUS_TEXT
from evalrun.reports.text import drift_text, rule_text, units
from evalrun.reports.view.model import CandidateSection, ReportView

MAX_FLIPS_SHOWN = 25
_COLOUR = {"pass": "green", "fail": "red", "incomplete": "yellow", "untestable": "cyan"}


def status_markup(status: str, bold: bool = False) -> str:
    """PASS / FAIL / INCOMPLETE / NOT TESTABLE in its colour (the one spelling every terminal line uses)."""
    style = f"bold {_COLOUR[status]}" if bold else _COLOUR[status]
    return f"[{style}]{STATUS_TEXT[status]}[/]"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _table(title: str, columns: list[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right")
    return table


def render_pack_metrics(console: Console, run_name: str, metrics: dict[str, PackMetrics]) -> None:
    """One run's metrics: a row per pack, then a row per field for packs with several fields."""
    table = _table(f"{escape(run_name)}: packs", ["pack", "items", "exact match %", "micro F1", "macro F1",
                                                  "precision", "recall", "drop %", "wrong %", "halluc. %", "parse"])
    for pm in metrics.values():
        m = pm.micro
        if m.total == 0:  # no fields asked: nothing scored
            table.add_row(escape(pm.pack), str(pm.items), SPEED_ONLY, *["-"] * 8)
            continue
        parse = ", ".join(f"{k} {v}" for k, v in sorted(pm.parse_status.items())) or "-"
        table.add_row(escape(pm.pack), str(pm.items), _pct(pm.exact_match_rate), f"{m.f1:.3f}", f"{pm.macro_f1:.3f}",
                      f"{m.precision:.3f}", f"{m.recall:.3f}", _pct(m.drop_rate), _pct(m.wrong_rate),
                      _pct(m.hallucination_rate), parse)
    console.print(table)
    for pm in metrics.values():
        if len(pm.fields) < 2:
            continue
        ft = _table(f"{escape(run_name)}: {escape(pm.pack)} fields", ["field", "type", "n", "accuracy %", "F1",
                                                                        "drop %", "wrong %", "halluc. %"])
        for f in pm.fields.values():
            ft.add_row(escape(f.name), f.kind, str(f.total), _pct(f.accuracy), f"{f.f1:.3f}", _pct(f.drop_rate),
                       _pct(f.wrong_rate), _pct(f.hallucination_rate))
        console.print(ft)


def _pack_table(title: str, section: CandidateSection) -> Table:
    gated = section.verdict is not None
    aa = any(p.aa_harmful is not None for p in section.packs)
    columns = ["pack", "items", "baseline", "candidate", "delta", "95% CI", "recovery", "McNemar mid-p", "MDE", "harmful",
               "helpful", "errors", "identical", "1st diff tok", *(["A/A harmful"] if aa else []),
               *(["verdict"] if gated else [])]
    table = _table(title, columns)
    for p in section.packs:
        if p.speed_only:
            row = [escape(p.pack), str(p.n), SPEED_ONLY, SPEED_ONLY, *["-"] * 7, str(p.errors),
                   units.pct(p.agreement, 0), units.divergence_cell(p.first_divergence, p.identical_outputs, p.n)]
        else:
            row = [escape(p.pack), str(p.n), units.pct(p.baseline_accuracy), units.pct(p.candidate_accuracy),
                   units.num(p.delta_points, 1, True), units.ci(p.ci_low_points, p.ci_high_points),
                   units.pct(p.recovery), units.p_value(p.p_value), units.num(p.mde_points), str(p.harmful_items),
                   str(p.helpful_items), str(p.errors), units.pct(p.agreement, 0),
                   units.divergence_cell(p.first_divergence, p.identical_outputs, p.n)]
        if aa:
            row.append("-" if p.speed_only or p.aa_harmful is None else str(p.aa_harmful))
        if gated:
            row.append(status_markup(p.status or "incomplete"))
        table.add_row(*row)
    return table


def _field_table(title: str, section: CandidateSection) -> Table:
    ft = _table(f"{title}: fields (paired items; drop and wrong are the candidate's)",
                ["pack", "field", "type", "n", "baseline", "candidate", "delta", "95% CI", "recovery", "F1 base",
                 "F1 cand", "drop", "wrong", "harmful", "helpful"])
    for column in ft.columns[3:]:
        column.no_wrap = True  # numbers and intervals stay on one line; names give way first
    for f in section.fields:
        ft.add_row(escape(f.pack), escape(f.field), f.kind, str(f.n), units.pct(f.baseline_accuracy),
                   units.pct(f.candidate_accuracy), units.num(f.delta_points, 1, True),
                   units.ci(f.ci_low_points, f.ci_high_points), units.pct(f.recovery), units.num(f.baseline_f1, 3),
                   units.num(f.candidate_f1, 3), units.pct(f.candidate_drop_rate), units.pct(f.candidate_wrong_rate),
                   str(f.harmful_flips), str(f.helpful_flips))
    return ft


def render_comparison(console: Console, section: CandidateSection) -> None:
    """One candidate against the baseline; a section without a verdict is the ungated noise floor."""
    comparison, verdict = section.comparison, section.verdict
    title = f"{escape(comparison.candidate)} vs {escape(comparison.baseline)}"
    console.print(_pack_table(title, section))
    if section.fields:
        console.print(_field_table(title, section))
    if section.drift is not None:
        table = _table(f"{title}: drift on the baseline's answers (teacher-forced)", drift_text.HEADERS)
        for cells in drift_text.rows(section.drift):
            table.add_row(*(escape(c) for c in cells))
        console.print(table)
        for note in drift_text.notes(section.drift):
            console.print(f"[yellow]note:[/] {escape(note)}", soft_wrap=True)
    flips = comparison.harmful
    if flips:
        console.print(f"Harmful flips ({len(flips)}): correct at {escape(comparison.baseline)}, "
                      f"not in {escape(comparison.candidate)}")
        for f in flips[:MAX_FLIPS_SHOWN]:
            code = f.subcode or f.candidate_outcome
            status = units.flip_status(f, verdict)
            console.print(
                f"  {escape(f.item_id)}  {escape(f.field)}  {escape(units.flat_clip(f.gold, 28))} -> "
                f"{escape(units.flat_clip(f.candidate_value))}  [yellow]{escape(code)}[/]"
                + (f"  ({escape(status)})" if status else "")
                + (f"  [dim]{escape(why)}[/]" if (why := drift_text.flip_text(section.drift, f)) else ""),
                soft_wrap=True,
            )
        if len(flips) > MAX_FLIPS_SHOWN:
            console.print(f"  ... and {len(flips) - MAX_FLIPS_SHOWN} more")
    if verdict is None:
        console.print()
        return
    for note in verdict.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    console.print(f"[bold]{escape(comparison.candidate)}:[/] {status_markup(verdict.status, bold=True)} "
                  f"({verdict.summary()})")
    for r in verdict.rules:
        console.print(f"  {status_markup(r.status)}  {escape(r.pack)}  {escape(rule_text(r))}")
    for g in verdict.gaps:
        console.print(f"  {status_markup('incomplete')}  {escape(g.pack)}  {escape(g.reason)}", soft_wrap=True)
    console.print()


def render_view(console: Console, view: ReportView) -> None:
    """Every comparison of the view, the noise floor first, then the speed table."""
    if view.noise_section is not None:
        render_comparison(console, view.noise_section)
    if view.noise_floor is not None:
        console.print(escape(view.noise_floor.sentence), soft_wrap=True)
    if view.drift_note:
        console.print(f"[yellow]note:[/] {escape(view.drift_note)}", soft_wrap=True)
    for section in view.sections:
        render_comparison(console, section)
    render_speed(console, view.speed_table)


def render_speed(console: Console, table: SpeedTable) -> None:
    """The speed-accuracy table (vLLM's definitions), the per-pack/shape/length breakdown and what
    the figures assume."""
    if not table.rows:
        return
    served = any(r.server_timings is not None for r in table.rows)  # the engine's own clock, beside the client's
    main = _table("Speed (vLLM bench serve definitions; latency p50 / p99)",
                  ["run", "acceleration", "load", "TTFT", "TTFT speedup", "TPOT", "TPOT speedup",
                   *(["server TTFT / TPOT (mean)"] if served else []), "ITL p99", "E2EL",
                   "E2EL speedup", "req/s", "out tok/s", "goodput"])
    cost = _table("Speed vs accuracy: what it costs", ["run", "peak memory", "memory saved", "KV / token",
                                                       "accuracy delta (95% CI)", "harmful", "req/s / device",
                                                       "devices"])
    for r in table.rows:
        name = escape(r.run + ("" if r.role in ("baseline", "candidate") else f" ({r.role})"))
        main.add_row(
            name, escape(r.method), units.load_cell(r),
            units.latency_cell(r.metrics, "ttft"), units.speedup_cell(r, "ttft_p50", short=True),
            units.latency_cell(r.metrics, "tpot"), units.speedup_cell(r, "tpot_p50", short=True),
            *([units.server_cell(r)] if served else []), units.latency_cell(r.metrics, "itl", ("p99",)),
            units.latency_cell(r.metrics, "e2el"), units.speedup_cell(r, "e2el_p50", short=True),
            units.rate(r.request_throughput, 2), units.rate(r.output_throughput), escape(units.goodput_cell(r.goodput)))
        cost.add_row(
            name, units.size(r.peak_memory_bytes), units.memory_saved_cell(r), units.size(r.kv_bytes_per_token),
            escape(units.accuracy_cell(r)), "-" if r.harmful_flips is None else str(r.harmful_flips),
            units.rate(r.requests_per_second_per_device, 2) if r.requests_per_second_per_device else "-",
            str(r.devices_needed) if r.devices_needed is not None else "-")
    console.print(main)
    console.print(cost)
    if any(len(r.groups) > 2 for r in table.rows):
        bt = _table("Speed by pack, shape and context length (p50 / p99)",
                    ["run", "by", "group", "items", "TTFT", "TPOT", "E2EL", "req/s", "goodput"])
        for r in table.rows:
            for g in r.groups:
                bt.add_row(escape(r.run), g.kind, escape(g.name), str(g.items), units.latency_cell(g.metrics, "ttft"),
                           units.latency_cell(g.metrics, "tpot"), units.latency_cell(g.metrics, "e2el"),
                           units.rate(g.request_throughput, 2), units.pct(g.goodput_share))
        console.print(bt)
    for r in table.rows:
        if r.speed_note and r.role != "baseline":
            console.print(escape(f"{r.run}: {r.speed_note}"), soft_wrap=True)
        if r.engine:
            console.print(escape(f"{r.run} {r.engine}"), soft_wrap=True)
    console.print(escape(table.spread_note), soft_wrap=True)
    if table.server_note:
        console.print(escape(table.server_note), soft_wrap=True)
    console.print(escape(units.definitions_note(table)), soft_wrap=True)
    kinds = sorted({r.peak_memory_kind for r in table.rows if r.peak_memory_kind})
    if kinds:
        console.print(escape(f"Peak memory: {', '.join(kinds)}; memory saved is claimed only between peaks of the "
                             "same kind that each cover their own run."), soft_wrap=True)
    if table.capacity_note:
        console.print(escape(table.capacity_note), soft_wrap=True)
    console.print()
