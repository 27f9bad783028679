"""The terminal rendering of runs and comparisons: tables, the flipped fields,
the verdict. Model text is shown escaped (rich markup in it stays inert)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evalrun.evals.metrics import FieldMetrics, PackMetrics
from evalrun.evals.pairing import Comparison
from evalrun.evals.speed_table import EMULATED_NOTE, SPEED_ONLY, SpeedRow, SpeedTable
from evalrun.evals.verdict import STATUS_TEXT, Verdict
from evalrun.reports import units
from evalrun.reports.summary import rule_text

MAX_FLIPS_SHOWN = 25
_COLOUR = {"pass": "green", "fail": "red", "incomplete": "yellow"}


def status_markup(status: str, bold: bool = False) -> str:
    """PASS / FAIL / INCOMPLETE in its colour (the one spelling every terminal line uses)."""
    style = f"bold {_COLOUR[status]}" if bold else _COLOUR[status]
    return f"[{style}]{STATUS_TEXT[status]}[/]"


def _clip(text: str | None, width: int = 60) -> str:
    if text is None:
        return "∅"
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


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


def _field_rows(comparison: Comparison, base: dict[str, PackMetrics], cand: dict[str, PackMetrics]) -> list[tuple]:
    harmful: dict[tuple[str, str], int] = {}
    for f in comparison.harmful:
        harmful[(f.pack, f.field)] = harmful.get((f.pack, f.field), 0) + 1
    rows = []
    for pack, bpm in base.items():
        cpm = cand.get(pack)
        if cpm is None or len(bpm.fields) < 2:
            continue
        for name, bf in bpm.fields.items():
            cf = cpm.fields.get(name, FieldMetrics(name, bf.kind))
            rows.append((pack, bf, cf, harmful.get((pack, name), 0)))
    return rows


def render_comparison(
    console: Console,
    comparison: Comparison,
    verdict: Verdict | None,
    base_metrics: dict[str, PackMetrics] | None = None,
    cand_metrics: dict[str, PackMetrics] | None = None,
    noise_floor: Comparison | None = None,
) -> None:
    """One candidate against the baseline; `verdict` None renders an ungated comparison (the A/A noise floor)."""
    title = f"{escape(comparison.candidate)} vs {escape(comparison.baseline)}"
    aa = {pc.pack: pc for pc in noise_floor.packs} if noise_floor else {}
    columns = ["pack", "items", "baseline", "candidate", "delta", "95% CI", "McNemar p", "MDE", "harmful",
               "helpful", "errors", "identical"]
    if aa:
        columns.append("A/A harmful")
    if verdict is not None:
        columns.append("verdict")
    table = _table(title, columns)
    for pc in comparison.packs:
        st = pc.stats
        if pc.speed_only:
            row = [escape(pc.pack), str(pc.n), SPEED_ONLY, SPEED_ONLY, "-", "-", "-", "-", "-", "-", str(pc.errors),
                   f"{100 * pc.agreement:.0f}%"]
            if aa:
                row.append("-")
            if verdict is not None:
                row.append(status_markup(verdict.pack_status(pc.pack)))
            table.add_row(*row)
            continue
        row = [
            escape(pc.pack), str(pc.n), f"{_pct(pc.baseline_accuracy)}%", f"{_pct(pc.candidate_accuracy)}%",
            f"{pc.delta_points:+.1f}",
            f"[{100 * st.interval.low:+.1f}, {100 * st.interval.high:+.1f}]" if st else "-",
            f"{st.paired.p_value:.3g}" if st else "-",
            f"{100 * st.mde:.1f}" if st else "-",
            str(pc.harmful_items), str(pc.helpful_items), str(pc.errors), f"{100 * pc.agreement:.0f}%",
        ]
        if aa:
            row.append(str(aa[pc.pack].harmful_items) if pc.pack in aa else "-")
        if verdict is not None:
            row.append(status_markup(verdict.pack_status(pc.pack)))
        table.add_row(*row)
    console.print(table)
    rows = _field_rows(comparison, base_metrics or {}, cand_metrics or {})
    if rows:
        ft = _table(f"{title}: fields", ["pack", "field", "type", "n", "baseline acc %", "candidate acc %", "delta",
                                         "baseline F1", "candidate F1", "cand. drop %", "cand. wrong %", "harmful"])
        for pack, bf, cf, harm in rows:
            ft.add_row(escape(pack), escape(bf.name), bf.kind, str(bf.total), _pct(bf.accuracy), _pct(cf.accuracy),
                       f"{100 * (cf.accuracy - bf.accuracy):+.1f}", f"{bf.f1:.3f}", f"{cf.f1:.3f}",
                       _pct(cf.drop_rate), _pct(cf.wrong_rate), str(harm))
        console.print(ft)
    flips = comparison.harmful
    if flips:
        console.print(f"Harmful flips ({len(flips)}): correct at {escape(comparison.baseline)}, "
                      f"not in {escape(comparison.candidate)}")
        for f in flips[:MAX_FLIPS_SHOWN]:
            code = f.subcode or f.candidate_outcome
            console.print(
                f"  {escape(f.item_id)}  {escape(f.field)}  {escape(_clip(f.gold, 28))} -> "
                f"{escape(_clip(f.candidate_value))}  [yellow]{escape(code)}[/]",
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


def _speed_claim(row: SpeedRow, value: str) -> str:
    """The value, or why there is no claim (in short; the full note is printed under the table)."""
    if row.role == "baseline" or not row.speed_note:
        return value
    return EMULATED_NOTE if EMULATED_NOTE in row.speed_note else "not comparable"


def _accuracy_cell(row: SpeedRow) -> str:
    if row.role == "baseline":
        return SPEED_ONLY if row.speed_only else "-"
    if row.speed_only:
        return SPEED_ONLY
    return units.delta_points(row.accuracy_delta_points, row.accuracy_ci_low_points, row.accuracy_ci_high_points)


def render_speed(console: Console, table: SpeedTable) -> None:
    """The speed-accuracy table, the per-context-length breakdown and what the figures assume."""
    if not table.rows:
        return
    main = _table("Speed vs accuracy", ["run", "acceleration", "batch", "TTFT p50 / p95", "TTFT speedup",
                                        "decode tok/s p50 / p95", "decode speedup", "peak memory", "memory saved",
                                        "KV / token", "accuracy delta (95% CI)", "harmful", "req/s / device",
                                        "devices"])
    for r in table.rows:
        base = r.role == "baseline"
        main.add_row(
            escape(r.run + ("" if r.role in ("baseline", "candidate") else f" ({r.role})")), escape(r.method),
            str(r.batch_size or "-"),
            f"{units.seconds(r.ttft_p50)} / {units.seconds(r.ttft_p95)}",
            ("1.00×" if r.ttft_p50 is not None else "-") if base
            else _speed_claim(r, units.ratio(r.ttft_speedup, r.ttft_speedup_low, r.ttft_speedup_high)),
            f"{units.rate(r.decode_tps_p50)} / {units.rate(r.decode_tps_p95)}",
            ("1.00×" if r.decode_tps_p50 is not None else "-") if base
            else _speed_claim(r, units.ratio(r.decode_speedup, r.decode_speedup_low, r.decode_speedup_high)),
            units.size(r.peak_memory_bytes),
            "-" if base or r.speed_note else units.size(r.memory_saved_bytes, signed=True),
            units.size(r.kv_bytes_per_token),
            escape(_accuracy_cell(r)),
            "-" if r.harmful_flips is None else str(r.harmful_flips),
            units.rate(r.requests_per_second_per_device, 2) if r.requests_per_second_per_device else "-",
            str(r.devices_needed) if r.devices_needed is not None else "-",
        )
    console.print(main)
    if any(r.buckets for r in table.rows):
        bt = _table("Speed by context length (prompt tokens)", ["run", "bucket", "items", "TTFT p50", "TTFT p95",
                                                                 "per token p50", "per token p95", "decode tok/s p50",
                                                                 "decode tok/s p95"])
        for r in table.rows:
            for b in r.buckets:
                bt.add_row(escape(r.run), escape(b.bucket), str(b.items), units.seconds(b.ttft_p50),
                           units.seconds(b.ttft_p95), units.seconds(b.per_token_p50), units.seconds(b.per_token_p95),
                           units.rate(b.decode_tps_p50), units.rate(b.decode_tps_p95))
        console.print(bt)
    for r in table.rows:
        if r.speed_note and r.role != "baseline":
            console.print(escape(f"{r.run}: {r.speed_note}"), soft_wrap=True)
    console.print(escape(table.spread_note), soft_wrap=True)
    kinds = sorted({r.peak_memory_kind for r in table.rows if r.peak_memory_kind})
    if kinds:
        console.print(escape(f"Peak memory: {', '.join(kinds)}; memory saved is claimed only between peaks of the "
                             "same kind that each cover their own run."), soft_wrap=True)
    if table.capacity_note:
        console.print(escape(table.capacity_note), soft_wrap=True)
    console.print()
