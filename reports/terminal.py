"""The terminal rendering of a comparison: one table per candidate, the flipped
items, and the verdict. Model text is shown escaped (rich markup is inert)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evals.gate import Verdict
from evals.pairing import Comparison

MAX_FLIPS_SHOWN = 25


def _clip(text: str | None, width: int = 60) -> str:
    if text is None:
        return "∅"
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def render_comparison(console: Console, comparison: Comparison, verdict: Verdict) -> None:
    table = Table(title=f"{escape(comparison.candidate)} vs {escape(comparison.baseline)}", title_justify="left")
    for col, justify in [("pack", "left"), ("items", "right"), ("baseline", "right"), ("candidate", "right"),
                         ("delta", "right"), ("harmful", "right"), ("helpful", "right"), ("errors", "right"),
                         ("identical", "right"), ("verdict", "left")]:
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for pc in comparison.packs:
        pack_ok = all(r.passed for r in verdict.rules if r.pack == pc.pack)
        table.add_row(
            escape(pc.pack),
            str(pc.n),
            f"{100 * pc.baseline_accuracy:.1f}%",
            f"{100 * pc.candidate_accuracy:.1f}%",
            f"{pc.delta_points:+.1f}",
            str(pc.harmful_items),
            str(len({f.item_id for f in pc.helpful})),
            str(pc.errors),
            f"{100 * pc.agreement:.0f}%",
            "[green]PASS[/]" if pack_ok else "[red]FAIL[/]",
        )
    console.print(table)
    flips = comparison.harmful
    if flips:
        console.print(f"Harmful flips ({len(flips)}): baseline correct -> {escape(comparison.candidate)} not")
        for f in flips[:MAX_FLIPS_SHOWN]:
            code = f.candidate_outcome + (f"/{f.subcode}" if f.subcode else "")
            console.print(
                f"  {escape(f.item_id)}  {escape(f.field)} ({f.kind})  "
                f"gold {escape(_clip(f.gold, 24))}  ->  {escape(_clip(f.candidate_value))}  [yellow]{escape(code)}[/]",
                soft_wrap=True,
            )
        if len(flips) > MAX_FLIPS_SHOWN:
            console.print(f"  ... and {len(flips) - MAX_FLIPS_SHOWN} more")
    for note in verdict.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    failed = [r for r in verdict.rules if not r.passed]
    if verdict.passed:
        console.print(f"[bold green]{escape(comparison.candidate)}: PASS[/] ({len(verdict.rules)} rules)")
    else:
        reasons = "; ".join(f"{r.pack}: {r.rule} measured {r.measured:g} > {r.threshold:g}" for r in failed)
        console.print(f"[bold red]{escape(comparison.candidate)}: FAIL[/] — {escape(reasons)}")
    console.print()
