"""`evalrun check` (the dry run), `evalrun plan` (items needed per pack) and `evalrun calibrate` (the gate's
error rates measured on repeats of a config): what a comparison would do, and what its verdict is worth."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from evalrun.cli_app import _guard, _log, console, duration, keep_option, make_progress
from evalrun.evals import api
from evalrun.evals.gate import load_gate_file
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


def calibrate(
    config: Path = typer.Argument(..., help="The baseline configuration YAML to measure."),
    repeats: int = typer.Option(12, "--repeats", min=3, max=40, help="Runs of CONFIG in all (the stored run and "
                                "R - 1 replicates); every pair is an A/A comparison: 12 give 66 pairs."),
    plants: int = typer.Option(3, "--plants", min=1, max=50, help="Planted-fault comparisons per pair and pack "
                               "for the measured power."),
    gate: Optional[Path] = typer.Option(None, "--gate", help="Gate rules YAML the rates are measured for "
                                        "(default: the config's `gate:`, else the built-in rules)."),
    out: Path = typer.Option(Path("runs"), "--out", help="Run store directory; the profile is stored with the "
                             "config's first run."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N items of each pack."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the profile to this path."),
    keep_servers: bool = keep_option,
) -> None:
    """Measure CONFIG's noise and the gate's false-FAIL rate and power on it.

    Generates R runs of CONFIG the way its noise arises (a launched engine
    restarted each time, the hf runner in shuffled batches, a named server
    asked again): ordinary stored runs, resumable, that `compare` reuses as
    the baseline's replicates. Every pair of runs is gated as an A/A
    comparison, with the other runs as replicates and without them: each
    FAIL is a false one. Harmful flips planted (one digit changed) at the
    rate each pack's verdict says it detects measure its power. The profile
    is stored with the first run; `compare` then gates against it and says
    so. Exits 2 on a bad config, 3 when a run fails.
    """

    def go() -> None:
        result = api.calibrate(api.load(config), repeats, out=out, limit=limit, progress_factory=make_progress,
                               log=_log, gate=load_gate_file(gate) if gate else None, plants=plants,
                               keep_servers=keep_servers)
        prof = result.profile
        table = Table(title=f"A/A flips between {prof.repeats} repeats of {escape(prof.config)} ({escape(prof.how)})")
        for col in ("pack", "type", "flips / fields right in the other", "rate", "interval"):
            table.add_column(col, justify="left" if col in ("pack", "type") else "right")
        for s in prof.scopes:
            table.add_row(escape(s.pack), escape(s.type), f"{s.flips.k}/{s.flips.n}", f"{s.flips.rate:.2%}",
                          f"{100 * s.flips.low:.2g}-{100 * s.flips.high:.2g}%")
        console.print(table)
        console.print(f"unstable fields: {len(prof.unstable)} of {prof.fields}"
                      + "".join(f"\n  {escape(u.item)} {escape(u.field)}: right in {u.right} of {prof.repeats}"
                                for u in prof.unstable[:10])
                      + (f"\n  ... {len(prof.unstable) - 10} more in the profile" if len(prof.unstable) > 10 else ""))
        if prof.kl_floor is not None:
            console.print(f"A/A KL floor: {prof.kl_floor:.3g} nats per token (repeat 0 against the others)")
        for sp in prof.speed:
            ms = ", ".join("–" if v is None else f"{1000 * v:.1f}" for v in sp.seconds)
            console.print(f"{sp.metric} per repeat (ms): {ms}" + (f"; largest / smallest {sp.spread:.2f}"
                                                                  if sp.spread else ""))
        for label, rates in (("with the other repeats as replicates", prof.with_profile),
                             ("one run against one", prof.without_profile)):
            failed = ", ".join(f"{escape(k)} {v}" for k, v in rates.rules.items())
            console.print(f"gate false FAIL {label}: {rates.false_fail.text} of the A/A pairs"
                          + (f" ({failed})" if failed else "") + (f"; {rates.incomplete} incomplete"
                                                                  if rates.incomplete else ""))
        for m in prof.power:
            console.print(f"power {escape(m.pack)}: at the stated {100 * m.rate:.2g}% (stated power {m.stated:.0%}, "
                          f"exact {m.predicted:.2f}) detected in {m.detected.text}; {m.flips:.1f} flips planted per "
                          "comparison")
        console.print("compare will gate " + (f"with the {prof.repeats - 1} repeats as replicates" if prof.replicates
                                              else "one run against one: the answers did not move between repeats"))
        console.print(f"profile: {escape(str(result.path))}")
        if json_out is not None:
            json_out.write_text(result.path.read_text())

    _guard(go)
