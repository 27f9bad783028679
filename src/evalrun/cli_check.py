"""`evalrun check`: the dry run, printed. A thin layer over evals.api.check."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape

from evalrun.cli_app import _guard, console, duration
from evalrun.evals import api

if TYPE_CHECKING:
    from rich.console import JustifyMethod

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
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("pack", "left"), ("items", "right"), ("prompt tokens min / median / max", "right"), ("fields", "left"))
    for col, justify in columns:
        table.add_column(col, justify=justify)
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
