"""`evalrun check` (the dry run) and `evalrun plan` (items needed per pack): what a comparison would do, without
loading a model."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape

from evalrun.cli_app import _guard, console, duration
from evalrun.evals import api

if TYPE_CHECKING:
    from evalrun.evals.run import CheckResult


def _estimate_line(result: "CheckResult") -> str:
    est, stored = result.estimate, result.stored
    if not est.known:
        return f"estimated generation time: {est.basis}"
    assert est.all_seconds is not None and est.missing_seconds is not None
    if stored.state == "complete":
        head = f"none (the stored run is reused); generating it again (--fresh) ≈ {duration(est.all_seconds)}"
    elif stored.state == "partial":
        missing = stored.total - stored.stored
        head = (f"≈ {duration(est.missing_seconds)} for the {missing} items not stored "
                f"(all {stored.total}: ≈ {duration(est.all_seconds)})")
    else:
        head = f"≈ {duration(est.all_seconds)} for {stored.total} items"
    load = f"; plus model load ≈ {duration(est.load_seconds)}" if est.load_seconds and stored.state != "complete" else ""
    return f"estimated generation time: {head}{load}\n  from {est.basis}"


def render_check(result: "CheckResult") -> None:
    """One config: the model and its context, a row per pack, the run directory and the estimate."""
    from rich.table import Table

    room = result.prompt_room
    context = (f"context {result.context} tokens: prompts up to {room} beside max_new_tokens {result.max_new_tokens}"
               if room is not None else f"context unknown; max_new_tokens {result.max_new_tokens}")
    console.print(f"[bold]{escape(result.label)}[/] ({escape(result.config_file)}): {escape(result.model)} on "
                  f"{escape(result.device)} ({escape(result.dtype)}); {context}")
    table = Table()
    for col in ("pack", "items", "prompt tokens min / median / max", "fields"):
        table.add_column(col, justify="left" if col in ("pack", "fields") else "right")
    for p in result.packs:
        over = room is not None and p.prompt_tokens_max > room
        tokens = f"{p.prompt_tokens_min} / {p.prompt_tokens_median:g} / {p.prompt_tokens_max}"
        table.add_row(escape(p.pack), str(p.items),
                      f"[red]{tokens} (over {room})[/]" if over else f"{tokens} (of {room})" if room else tokens,
                      escape(p.fields_text()))
    console.print(table)
    console.print(f"  run directory: {escape(str(result.run_dir))} (key {result.key[:12]}); stored run: "
                  f"{escape(result.stored.text())}")
    console.print(f"  {escape(_estimate_line(result))}")
    for note in result.notes:
        console.print(f"  note: {escape(note)}")


def check(
    configs: list[Path] = typer.Argument(..., help="Configuration YAMLs, in the order `compare` would get them "
                                         "(baseline first)."),
    gate: Optional[Path] = typer.Option(None, "--gate", help="Gate rules YAML to check too (as `compare --gate`)."),
    out: Path = typer.Option(Path("runs"), "--out", help="Run store the runs would be stored in (and measured from)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N items of each pack."),
) -> None:
    """Dry run: validate configs, gates and data; build items without loading model weights.

    Checks each CONFIG and its `extends:` chain, the --gate file and each
    config's `gate:` (a pack or field the built items lack is an error) and
    every data file, and builds the items with the model's tokenizer only.
    Prints per config and pack the item count, prompt tokens against the
    model's context, the fields by type, the run directory and what of it is
    stored, and the expected generation time, measured from this config's
    stored run or the newest stored run of the same model and device in
    --out. Exits 0 when everything is valid, 2 on the first problem (one
    line naming the file and key).
    """
    started = time.perf_counter()

    def go() -> None:
        loaded = [api.load(p) for p in configs]  # every config's own errors before any tokenizer work
        results = api.check(loaded, gate=gate, out=out, limit=limit)
        for result in results:
            render_check(result)
        items = sum(r.items for r in results)
        console.print(f"check: {len(results)} config{'s' if len(results) != 1 else ''} valid (gates and data "
                      f"included); {items} items built without loading weights in "
                      f"{time.perf_counter() - started:.1f} s")

    _guard(go)


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
