"""The `evalrun` command line: a thin layer over evals.api (exit codes: the app's help, docs/commands.md)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Optional

import typer
from rich.markup import escape
from rich.table import Table

from evalrun.cli_app import (_guard, _log, app, console, err_console, keep_option, make_progress, say_failure,
                             trust_option)
from evalrun.cli_catalog import accelerations, packs_app
from evalrun.cli_check import calibrate, check, plan
from evalrun.cli_export import export
from evalrun.cli_import import import_app, resolve_run, runs_given
from evalrun.cli_sweep import COUNT_HELP, LOAD_HELP, SLO_HELP, WORKLOAD_HELP, check_usage, run_load, slo_given
from evalrun.cli_outputs import Outputs
from evalrun.cli_options import TimingMode, apply_ray, apply_timing, drift_option, ray_option, timing_option
from evalrun.contract.errors import EXIT_RUNTIME
from evalrun.evals import api
from evalrun.evals.config import SweepPoint, sweep_points
from evalrun.evals.files import ConfigError
from evalrun.evals.gate import INCOMPLETE_NOTE, GateConfig, load_gate_file, overall_summary
from evalrun.evals.scoring import pack_metrics
from evalrun.evals.speed import CapacityInputs, run_timing, speed_table
from evalrun.evals.timing import SLO
from evalrun.reports.formats import render_pack_metrics, render_view, status_markup
from evalrun.reports.view.model import ReportView

out_option = typer.Option(Path("runs"), "--out", help="Run store directory; each run lives in OUT/<name>-<key12>/.")
limit_option = typer.Option(None, "--limit", min=1, help="Only the first N items of each pack (smoke checks; "
                            "a comparison of them is INCOMPLETE unless --subset).")
subset_option = typer.Option(False, "--subset", help="Judge the verdict on the items both runs asked when the "
                             "candidate asks less than the baseline's plan (a dropped pack, narrower parameters, "
                             "--limit); every output then says SUBSET. Without it that is INCOMPLETE (exit 4).")
html_option = typer.Option(None, "--html", help="Write a self-contained HTML report (works offline) to this path.")
rpd_option = typer.Option(None, "--requests-per-day", min=0, help="Daily request volume for the capacity estimate "
                          "(devices needed per run).")
peak_option = typer.Option(1.0, "--peak-factor", min=1.0, help="Peak request rate over the daily mean, for the "
                           "capacity estimate.")
junit_option = typer.Option(None, "--junit", help="Write JUnit XML (a testcase per candidate x pack x rule; gaps "
                            "in the data are testcases in error).")
markdown_option = typer.Option(None, "--markdown", help="Write a Markdown summary (also appended to "
                               "$GITHUB_STEP_SUMMARY when set).")
json_option = typer.Option(None, "--json", help="Write the full comparison and verdict as JSON.")
slo_option = typer.Option(None, "--slo", help="Service-level objectives for goodput, e.g. "
                          "ttft=500ms,tpot=50ms,e2el=10s (a bare number is ms): a request is good only when it meets "
                          "every one. Default: the baseline config's `slo:`.")
percentiles_option = typer.Option("50,90,95,99", "--percentiles", help="Latency percentiles to report, e.g. 50,99 "
                                  "(vLLM's --metric-percentiles).")

def _speed_options(slo: str | None, percentiles: str) -> tuple["SLO | None", list[float]]:
    """--slo and --percentiles, checked before any work (exit 2 naming the option)."""
    chosen = slo_given(slo)
    try:
        qs = [float(q) for q in percentiles.split(",") if q.strip()]
    except ValueError:
        qs = []
    if not qs or not all(0 < q < 100 for q in qs):
        raise ConfigError(f"expected percentiles between 0 and 100 such as 50,90,99, got {percentiles!r}",
                          path="--percentiles")
    return chosen, qs


def _judged(outputs: Outputs, started: float, gate: Path | None, cap: CapacityInputs, slo: str | None,
            percentiles: str, judge: Callable[["GateConfig | None", "SLO | None"], "api.CompareReport"]) -> int:
    """`compare` and `report` once their runs are known: the options checked and the outputs claimed before
    `judge` (gate, slo) does any work, then the report printed and written; the exit code."""
    gate_cfg = load_gate_file(gate) if gate else None
    outputs.claim()
    chosen_slo, qs = _speed_options(slo, percentiles)
    report = judge(gate_cfg, chosen_slo)
    table = speed_table(report, cap, qs, report.slo)
    return _finish(report, outputs, outputs.write(report, table, time.perf_counter() - started, _log,
                                                  terminal=lambda view: _print_report(view, started)))


@app.command()
def run(
    config: Path = typer.Argument(..., help="Configuration YAML to run."), out: Path = out_option,
    limit: Optional[int] = limit_option, ray: Optional[str] = ray_option, keep_servers: bool = keep_option,
) -> None:
    """Generate (or resume, or reuse) one configuration's run and print where it is stored."""

    def go() -> None:
        [cfg] = apply_ray([api.load(config)], ray, _log)
        result = api.run(cfg, out, limit, make_progress(), _log, keep_servers=keep_servers)
        scored = api.score(result)
        correct = sum(s.correct for s in scored)
        render_pack_metrics(console, result.name, pack_metrics(scored))
        gens = list(result.generations.values())
        errors = sum(1 for g in gens if g.error is not None)
        cut = sum(1 for g in gens if g.error is None and g.finish_reason == "length")
        console.print(
            f"{escape(cfg.name)}: {correct}/{len(scored)} items correct; "
            f"{'reused' if result.reused else f'{result.generated} generated'}; {errors} errors; "
            f"{cut} cut at max_new_tokens; run: {escape(str(result.dir))}"
            + (f"; --limit {limit}: only the first {limit} item(s) of each pack (recorded in its manifest; a "
               "comparison against it is INCOMPLETE unless --subset)" if limit else "")
        )

    _guard(go)


@app.command()
def compare(
    baseline: Path = typer.Argument(..., help="Baseline configuration YAML."),
    candidates: list[Path] = typer.Argument(..., help="One or more candidate configuration YAMLs."),
    out: Path = out_option,
    limit: Optional[int] = limit_option,
    gate: Optional[Path] = typer.Option(None, "--gate", help="Gate rules YAML; overrides each candidate's `gate:`."),
    junit: Optional[Path] = junit_option,
    markdown: Optional[Path] = markdown_option,
    json_out: Optional[Path] = json_option,
    noise_floor: bool = typer.Option(False, "--noise-floor", help="Run the baseline twice (as --replicates 2) and "
                                     "show its A/A flips next to each candidate's."),
    replicates: Optional[int] = typer.Option(None, "--replicates", min=1, max=20, help="Generate the baseline K "
                                             "times in all, each replicate in other batches: flips are gated only on "
                                             "fields stable across them and tested against their A/A rate (one-sided "
                                             "Fisher). Default: the repeats of the baseline's noise profile where "
                                             "`evalrun calibrate` stored one, else 1."),
    confirm: Optional[int] = typer.Option(None, "--confirm", min=0, max=15, help="Re-ask each flipped item N more "
                                          "times in other batches (batch 1 first); a flip counts only when it "
                                          "reproduces in the majority. Overrides the gate's `confirm`."),
    early_stop: bool = typer.Option(True, "--early-stop/--no-early-stop", help="Stop a candidate's generation as "
                                    "soon as its FAIL is decided (more items could not undo it); a PASS is never "
                                    "early. --no-early-stop runs every item."),
    fresh: bool = typer.Option(False, "--fresh", "--repeat", help="Generate every run again (stored runs are moved "
                               "aside, not deleted)."),
    html: Optional[Path] = html_option,
    requests_per_day: Optional[float] = rpd_option,
    peak_factor: float = peak_option,
    slo: Optional[str] = slo_option,
    percentiles: str = percentiles_option,
    ray: Optional[str] = ray_option,
    timing: Optional[TimingMode] = timing_option,
    subset: bool = subset_option, drift: bool = drift_option,
    keep_servers: bool = keep_option,
    control: Optional[Path] = typer.Option(None, "--control", help="A control config (e.g. the candidate's "
                                           "other changes without its flag), generated in full before the "
                                           "candidates and never gated: each harmful flip is marked 'also in "
                                           "control' or 'flag only'; gate `flips: flag_only` counts only the latter."),
) -> None:
    """Run BASELINE and each CANDIDATE on identical items, pair them and gate.

    A stored baseline with the same cache key is reused, so CI pays only for
    the candidates. Giving the baseline again as a candidate (A.yaml A.yaml)
    generates it a second time: an A/A comparison. With --replicates K the
    baseline is generated K times in other batches and the gate counts flips
    only on fields stable across them, tested against their A/A rate; every
    verdict states the flip rate its packs can detect. A candidate stops
    generating once its FAIL is decided (--no-early-stop runs every item).
    Exits 1 when any candidate fails the gate, 4 when nothing failed but the
    comparison is incomplete. Output paths are checked before any generation.
    """
    started = time.perf_counter()
    outputs = Outputs(html=html, junit=junit, markdown=markdown, json=json_out)

    def go() -> int:
        configs = apply_ray([api.load(p) for p in [baseline, *candidates, *([control] if control else [])]], ray, _log)
        ctrl = configs.pop() if control else None
        configs = configs[:1] + apply_timing(configs[1:], timing)
        return _judged(outputs, started, gate, CapacityInputs(requests_per_day, peak_factor), slo, percentiles,
                       lambda gate_cfg, chosen_slo: api.compare(
                           configs[0], configs[1:], out=out, limit=limit, progress_factory=make_progress, log=_log,
                           gate=gate_cfg, noise_floor=noise_floor, fresh=fresh, replicates=replicates,
                           early_stop=early_stop, confirm_n=confirm, slo=chosen_slo, subset=subset,
                           keep_servers=keep_servers, drift=drift, control=ctrl))

    raise typer.Exit(_guard(outputs.guarded(go)))


# the dry run of `run` and `compare`, listed beside them in `evalrun --help`
app.command()(check)
app.command()(plan)
app.command()(calibrate)


def _print_report(view: "ReportView", started: float) -> None:
    """The terminal tables and the verdict line, from the view every output file renders too."""
    console.print()
    if view.noise_section is not None:
        console.print("[bold]Noise floor[/]: the baseline against a repeat of itself (not gated)")
    if view.control is not None:
        console.print(f"[bold]Control[/]: {escape(view.control.name)} (not gated): each harmful flip is 'also in "
                      "control' (the control lost it too) or 'flag only'")
    render_view(console, view)
    console.print(
        f"verdict: {status_markup(view.status, bold=True)} — "
        + ", ".join(f"{escape(v.candidate)} {status_markup(v.status)}" for v in view.verdicts)
        + f" ({escape(overall_summary(view.verdicts))})  ({time.perf_counter() - started:.1f} s)"
    )
    if view.status == "incomplete":
        console.print(f"[yellow]{escape(INCOMPLETE_NOTE)} Exit 4.[/]")


def _finish(report: "api.CompareReport", outputs: Outputs, failures: list[str]) -> int:
    """The verdict's exit code, or 3 when an output could not be written."""
    for line in failures:
        err_console.print(f"[bold red]error:[/] {escape(line)}")
    if outputs.html and not any(line.startswith(f"{outputs.html}:") for line in failures):
        console.print(f"HTML report: {escape(str(outputs.html))}")
    return EXIT_RUNTIME if failures else report.exit_code


@app.command()
def report(
    run_dirs: Optional[list[Path]] = typer.Argument(None, help="Stored run directories (or run names), the baseline "
                                                    "first, then the candidates."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="The baseline run: a directory, or a name stored "
                                            "under --out (an imported run's --name)."),
    candidate: Optional[list[Path]] = typer.Option(None, "--candidate", help="A candidate run (directory or name); "
                                                   "repeatable."),
    out: Path = typer.Option(Path("runs"), "--out", help="Where runs given by name are looked up."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write the self-contained HTML report to this path."),
    gate: Optional[Path] = typer.Option(None, "--gate", help="Gate rules YAML; overrides each run's stored `gate:`."),
    junit: Optional[Path] = junit_option,
    markdown: Optional[Path] = markdown_option,
    json_out: Optional[Path] = json_option,
    requests_per_day: Optional[float] = rpd_option,
    peak_factor: float = peak_option,
    slo: Optional[str] = slo_option,
    percentiles: str = percentiles_option,
    trust_edited_items: bool = trust_option,
    replicates: Optional[int] = typer.Option(None, "--replicates", min=1, max=20, help="Measure the noise with K "
                                             "baseline runs in all (the first K - 1 replicates stored beside it). "
                                             "Default: the replicates `compare` gated the candidates with."),
    subset: bool = subset_option,
    control: Optional[Path] = typer.Option(None, "--control", help="A stored control run (directory or name), "
                                           "as `compare --control` stores it: attributes each harmful flip."),
) -> None:
    """Compare stored runs again and render the reports, without loading a model.

    The first RUN_DIR is the baseline (or give --baseline and --candidate; a run may be
    named, as `evalrun import` stores it). Prints the same tables as `compare` and
    exits the same way: 1 when any candidate fails the gate, 4 when a stored
    run cannot cover every item of the baseline's plan (missing or unreadable
    generations, a baseline that raised, a dropped pack, --limit; see --subset).
    """
    started = time.perf_counter()
    outputs = Outputs(html=html, junit=junit, markdown=markdown, json=json_out)

    def go() -> int:
        dirs = runs_given(run_dirs, baseline, candidate, out, _log)
        ctrl = resolve_run(control, out, _log) if control else None
        return _judged(outputs, started, gate, CapacityInputs(requests_per_day, peak_factor), slo, percentiles,
                       lambda gate_cfg, chosen_slo: api.report(dirs, gate_cfg, trust_edited_items, log=_log,
                                                               slo=chosen_slo, replicates=replicates, subset=subset,
                                                               control=ctrl))

    raise typer.Exit(_guard(outputs.guarded(go)))


@app.command()
def sweep(
    base: Path = typer.Argument(..., help="The base configuration: the baseline and template of every --set "
                                "point, or the first config of a --load sweep."),
    configs: Optional[list[Path]] = typer.Argument(None, help="With --load: more configs, each its own curve."),
    set_: Optional[list[str]] = typer.Option(None, "--set", help="KEY.PATH=V1,V2,... one candidate per value "
                                             "(several --set give every combination), e.g. "
                                             "acceleration.kv_cache.quant=int2,int3,int4."),
    load: Optional[str] = typer.Option(None, "--load", help=LOAD_HELP),
    slo: Optional[str] = typer.Option(None, "--slo", help=SLO_HELP),
    workload: Optional[str] = typer.Option(None, "--workload", help=WORKLOAD_HELP),
    count: Optional[int] = typer.Option(None, "--count", min=1, max=10_000, help=COUNT_HELP),
    out: Path = out_option,
    limit: Optional[int] = limit_option,
    gate: Optional[Path] = typer.Option(None, "--gate", help="With --set: gate rules YAML for every point."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the full comparison (--set) or the "
                                            "load curves (--load) as JSON."),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help="Write a Markdown summary (also appended "
                                            "to $GITHUB_STEP_SUMMARY when set)."),
    html: Optional[Path] = html_option,
    subset: bool = subset_option,
) -> None:
    """Sweep a knob: accuracy against BASE (--set), or throughput and latency against the load (--load).

    --set runs one candidate per knob value against BASE and prints accuracy and speed
    against the knob; exit code as compare: 1 when any point fails the gate, 4 when one
    is incomplete. --load runs BASE and every CONFIG at each load (each point timed
    afresh in OUT/load/KNOB-VALUE/) and prints each config's curve and its best setting
    (the most good requests/s under --slo, else the highest request throughput); exit 0,
    2 for a usage or config error (a knob the config's runner does not read), 3 when a run fails.
    """
    started = time.perf_counter()
    outputs = Outputs(html=html, json=json_out, markdown=markdown)

    def go() -> int:
        check_usage(set_, load, configs, slo, workload, count, gate, html)
        if load:
            return run_load(base, list(configs or []), load, slo, workload, count, out, limit, outputs)
        base_cfg, points = sweep_points(base, list(set_ or []))
        gate_cfg = load_gate_file(gate) if gate else None
        outputs.claim()
        # a sweep is a curve: every point runs every item, even one whose FAIL is decided early
        report = api.compare(base_cfg, [p.config for p in points], out=out, limit=limit,
                             progress_factory=make_progress, log=_log, gate=gate_cfg, early_stop=False,
                             subset=subset)
        console.print(_sweep_table(base_cfg.name, points, report))
        return _finish(report, outputs, outputs.write(report, speed_table(report), time.perf_counter() - started, _log))

    raise typer.Exit(_guard(outputs.guarded(go)))


def _sweep_table(base_name: str, points: list["SweepPoint"], report: "api.CompareReport") -> "Table":
    """One row per knob value (the baseline first), so the knob's trade-off reads down a column."""
    packs = [pc.pack for pc in report.comparisons[0].packs] if report.comparisons else []
    table = Table(title=f"sweep of {escape(base_name)}: accuracy and speed against the knob", title_justify="left")
    for col in [*(k for k in points[0].values), *(f"{p} acc %" for p in packs), "delta (pts)", "harmful",
                "s / item", "speedup", "gate"]:
        table.add_column(escape(col), justify="right")
    _, base_s, _ = run_timing(report.baseline)
    base_row = ["baseline" for _ in points[0].values]
    base_row += [f"{100 * pc.baseline_accuracy:.1f}" for pc in report.comparisons[0].packs]
    table.add_row(*base_row, "-", "-", f"{base_s:.2f}" if base_s else "-", "1.00x", "-")
    for point, result, comparison, verdict in zip(points, [c.run for c in report.candidates], report.comparisons,
                                                  report.verdicts):
        _, s, _ = run_timing(result)
        n = sum(pc.n for pc in comparison.packs)
        delta = sum(pc.delta_points * pc.n for pc in comparison.packs) / n if n else 0.0
        emulated = bool(result.manifest.emulated)
        speed = "emulated" if emulated else (f"{base_s / s:.2f}x" if s and base_s else "-")
        table.add_row(*(escape(str(v)) for v in point.values.values()),
                      *(f"{100 * pc.candidate_accuracy:.1f}" for pc in comparison.packs),
                      f"{delta:+.1f}", str(len(comparison.harmful)), f"{s:.2f}" if s else "-", speed,
                      status_markup(verdict.status))
    return table


@app.command()
def rescore(
    run_dirs: list[Path] = typer.Argument(..., help="Stored run directories (runs/<name>-<key12>/)."),
    trust_edited_items: bool = trust_option,
) -> None:
    """Score stored runs again from their items and generations, without loading a model.

    Writes scores.jsonl into each run directory and prints the metrics.
    """
    def go() -> None:
        for run_dir in run_dirs:
            result = api.rescore(run_dir, trust_edited_items, log=_log)
            name = result.manifest.name or run_dir.name
            render_pack_metrics(console, name, result.metrics)
            if result.unanswered:
                console.print(f"[yellow]note:[/] {len(result.unanswered)} item(s) have no stored generation yet")
            console.print(f"scores written to {escape(str(result.run_dir / 'scores.jsonl'))}")

    _guard(go)


# stored runs as tables, and the catalog commands, registered here so `evalrun --help` lists them after the workflow's
app.command()(export)
app.command()(accelerations)
app.add_typer(packs_app, name="packs")
app.add_typer(import_app, name="import")


def main() -> None:
    try:
        app()
    except SystemExit:
        raise
    except Exception as exc:  # last resort: never a traceback for the user, but say what broke
        sys.exit(say_failure(exc))


if __name__ == "__main__":
    main()
