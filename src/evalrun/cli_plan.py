"""`evalrun plan`: how many items each pack needs to catch a harmful flip rate. A thin layer over evals.api.plan."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from evalrun.cli_app import _guard, console, duration


def plan(
    config: Path = typer.Argument(..., help="The baseline configuration YAML; its run must be stored in --out."),
    rate: float = typer.Option(0.01, "--rate", min=1e-6, max=0.999, help="Harmful flip rate to detect: the share "
                               "of fields right at baseline that a candidate gets wrong (0.01 = 1%)."),
    power: float = typer.Option(0.95, "--power", min=0.5, max=0.999, help="Probability of detecting it."),
    gate: Optional[Path] = typer.Option(None, "--gate", help="Gate rules YAML (default: the built-in rules)."),
    out: Path = typer.Option(Path("runs"), "--out", help="Run store directory holding the baseline's run."),
) -> None:
    """How many items each pack needs so its harmful-flip rules detect --rate with --power.

    Measured from the stored run of CONFIG (and replicates stored beside it, as
    `compare --replicates` makes them): fields per item the flip rules watch,
    the share the baseline gets right (and stable), its A/A flip rate, and its
    measured seconds per item on each pack for the time. No model is loaded.
    Exits 2 when no run of CONFIG is stored.
    """

    def go() -> None:
        from rich.table import Table

        from evalrun.evals import api
        from evalrun.evals.gate import load_gate_file

        cfg = api.load(config)
        result = api.plan(cfg, rate, power, out=out, gate=load_gate_file(gate) if gate else None, log=lambda m: None)
        noise = (f"{result.replicates} replicates: flips tested against their A/A rate" if result.replicates > 1
                 else "no replicates stored: every flip counts")
        table = Table(title=f"Items needed to detect a {100 * rate:g}% harmful flip rate with {power:.0%} "
                            f"probability ({noise})")
        for col in ("pack", "items now", "fields watched", "detects now", "items needed", "time for them"):
            table.add_column(col, justify="left" if col == "pack" else "right")
        for p in result.packs:
            now = f"{100 * p.detectable:.2g}%" if p.detectable is not None else "nothing"
            needed = f"{p.needed:,}" if p.needed is not None else "no number"
            seconds = f"≈ {duration(p.seconds)}" if p.seconds is not None else "–"
            table.add_row(escape(p.pack), str(p.items), str(p.fields), now, needed, seconds)
        console.print(table)
        console.print(f"measured from {escape(str(result.run_dir))}; time: the stored run's seconds per item on "
                      "each pack, at its batch size and device", soft_wrap=True)

    _guard(go)
