"""The `evalrun` command line: a thin layer over evals.api.

Exit codes: 0 passed, 1 regression found, 2 usage or configuration error,
3 runtime failure (model cannot load, a run cannot proceed, an output could
not be written), 4 incomplete (nothing failed, but the comparison does not
cover every item the candidates asked for, or a rule could not be evaluated:
never a pass).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional, get_args

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from evalrun.evals import api
from evalrun.evals.capacity import CapacityInputs
from evalrun.cli_outputs import Outputs
from evalrun.evals.config import ConfigError
from evalrun.evals.execute import RunFailed
from evalrun.evals.pairing import PairingError
from evalrun.evals.speed_table import SpeedTable, speed_table

if TYPE_CHECKING:
    from evalrun.reports.view.model import ReportView

EXIT_PASS, EXIT_REGRESSION, EXIT_USAGE, EXIT_RUNTIME, EXIT_INCOMPLETE = 0, 1, 2, 3, 4

app = typer.Typer(
    help=(
        "evalrun — accuracy regression harness for lossy LLM inference acceleration.\n\n"
        "Run the same task packs through a baseline configuration and faster candidates, pair the answers "
        "item by item, score every field by its type, and gate on harmful flips.\n\n"
        "Exit codes: 0 passed, 1 regression found, 2 usage/config error, 3 runtime failure, "
        "4 incomplete (nothing failed, but items could not be paired or a rule could not be evaluated: never a pass)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

out_option = typer.Option(Path("runs"), "--out", help="Run store directory; each run lives in OUT/<name>-<key12>/.")
limit_option = typer.Option(None, "--limit", min=1, help="Only the first N items of each pack (smoke checks).")
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
output_tokens_option = typer.Option(None, "--output-tokens", min=1, help="Mean output tokens per request for the "
                                    "capacity estimate (default: the baseline run's mean).")

def _console(stderr: bool = False) -> Console:
    # CI logs are not terminals: give tables room instead of rich's 80-column default.
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 160
    return Console(stderr=stderr, width=width)


console = _console()
err_console = _console(stderr=True)


class _RichProgress:
    """Adapter from the execute stage's progress protocol to a rich bar with ETA."""

    def __init__(self) -> None:
        self._progress: Progress | None = None
        self._task = None

    def start(self, label: str, total: int, done: int) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=err_console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(escape(label), total=total, completed=done)

    def advance(self, n: int = 1) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, n)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _fail(code: int, message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(code)


def _guard(fn):  # type: ignore[no-untyped-def]
    """Map the stages' exceptions to exit codes with one clear line, never a traceback."""
    try:
        return fn()
    except ConfigError as exc:
        _fail(EXIT_USAGE, str(exc))
    except PairingError as exc:
        _fail(EXIT_USAGE, str(exc))
    except RunFailed as exc:
        _fail(EXIT_RUNTIME, str(exc))
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted:[/] generated items are stored; run the same command again to resume")
        raise typer.Exit(130)


def _log(message: str) -> None:
    err_console.print(escape(message))


@app.command()
def run(
    config: Path = typer.Argument(..., help="Configuration YAML to run."),
    out: Path = out_option,
    limit: Optional[int] = limit_option,
) -> None:
    """Generate (or resume, or reuse) one configuration's run and print where it is stored."""

    def go() -> None:
        from evalrun.evals.metrics import pack_metrics
        from evalrun.reports.terminal import render_pack_metrics

        cfg = api.load(config)
        result = api.run(cfg, out=out, limit=limit, progress=_RichProgress(), log=_log)
        scored = api.score(result)
        correct = sum(s.correct for s in scored)
        render_pack_metrics(console, result.name, pack_metrics(scored))
        console.print(
            f"{escape(cfg.name)}: {correct}/{len(scored)} items correct; "
            f"{'reused' if result.reused else f'{result.generated} generated'}; run: {escape(str(result.dir))}"
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
    noise_floor: bool = typer.Option(False, "--noise-floor", help="Run the baseline twice and show its A/A flips "
                                     "next to each candidate's."),
    fresh: bool = typer.Option(False, "--fresh", "--repeat", help="Generate every run again (stored runs are moved "
                               "aside, not deleted)."),
    html: Optional[Path] = html_option,
    requests_per_day: Optional[float] = rpd_option,
    peak_factor: float = peak_option,
    output_tokens: Optional[float] = output_tokens_option,
) -> None:
    """Run BASELINE and each CANDIDATE on identical items, pair them and gate.

    A stored baseline with the same cache key is reused, so CI pays only for
    the candidates. Giving the baseline again as a candidate (A.yaml A.yaml)
    generates it a second time: an A/A comparison. Exits 1 when any candidate
    fails the gate, 4 when nothing failed but the comparison is incomplete.
    Output paths are checked before any generation.
    """
    started = time.perf_counter()

    def go() -> int:
        from evalrun.evals.gate import load_gate_file

        configs = [api.load(p) for p in [baseline, *candidates]]  # validate everything before any work
        gate_cfg = load_gate_file(gate) if gate else None
        outputs = Outputs(html=html, junit=junit, markdown=markdown, json=json_out)
        outputs.check()
        cap = _capacity(requests_per_day, peak_factor, output_tokens)
        report = api.compare(configs[0], configs[1:], out=out, limit=limit, progress_factory=_RichProgress, log=_log,
                             gate=gate_cfg, noise_floor=noise_floor, fresh=fresh)
        table = speed_table(report, cap)
        view = _print_report(report, started, table, html=html is not None)
        return _finish(report, outputs, outputs.write(report, table, time.perf_counter() - started, _log, view))

    code = _guard(go)
    raise typer.Exit(code)


def _capacity(requests_per_day: float | None, peak_factor: float, output_tokens: float | None) -> CapacityInputs:
    return CapacityInputs(requests_per_day=requests_per_day, peak_factor=peak_factor, output_tokens=output_tokens)


def _print_report(report: "api.CompareReport", started: float, speed: "SpeedTable | None" = None,
                  html: bool = False) -> "ReportView":
    """The terminal tables, the speed-accuracy table and the verdict line, from the view every
    output file renders too (returned for them; `html`: with the page-only parts)."""
    from evalrun.reports.terminal import render_view, status_markup
    from evalrun.reports.view import build_view

    view = build_view(report, speed=speed or speed_table(report), html=html)
    console.print()
    if view.noise_section is not None:
        console.print("[bold]Noise floor[/]: the baseline against a repeat of itself (not gated)")
    render_view(console, view)
    console.print(
        f"verdict: {status_markup(view.status, bold=True)} — "
        + ", ".join(f"{escape(v.candidate)} {status_markup(v.status)}" for v in view.verdicts)
        + f"  ({time.perf_counter() - started:.1f} s)"
    )
    if view.status == "incomplete":
        console.print("[yellow]nothing failed, but the comparison does not cover every item the candidates asked "
                      "for (see above): exit 4, not a pass[/]")
    return view


def _finish(report: "api.CompareReport", outputs: Outputs, failures: list[str]) -> int:
    """The verdict's exit code, or 3 when an output could not be written (each one named)."""
    for line in failures:
        err_console.print(f"[bold red]error:[/] {escape(line)}")
    if outputs.html and not any(line.startswith(f"{outputs.html}:") for line in failures):
        console.print(f"HTML report: {escape(str(outputs.html))}")
    return EXIT_RUNTIME if failures else report.exit_code


trust_option = typer.Option(False, "--trust-edited-items", help="Score a run whose items.jsonl no longer matches "
                            "the hash recorded when it ran, or whose manifest is unreadable (with a warning); "
                            "refused otherwise.")


@app.command()
def report(
    run_dirs: list[Path] = typer.Argument(..., help="Stored run directories, the baseline first, then the candidates."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write the self-contained HTML report to this path."),
    gate: Optional[Path] = typer.Option(None, "--gate", help="Gate rules YAML; overrides each run's stored `gate:`."),
    junit: Optional[Path] = junit_option,
    markdown: Optional[Path] = markdown_option,
    json_out: Optional[Path] = json_option,
    requests_per_day: Optional[float] = rpd_option,
    peak_factor: float = peak_option,
    output_tokens: Optional[float] = output_tokens_option,
    trust_edited_items: bool = trust_option,
) -> None:
    """Compare stored runs again and render the reports, without loading a model.

    The first RUN_DIR is the baseline. Prints the same tables as `compare` and
    exits the same way: 1 when any candidate fails the gate, 4 when a stored
    run cannot cover every item (missing or unreadable generations).
    """
    started = time.perf_counter()

    def go() -> int:
        from evalrun.evals.gate import load_gate_file

        if len(run_dirs) < 2:
            raise ConfigError("give the baseline's run directory and at least one candidate's")
        gate_cfg = load_gate_file(gate) if gate else None
        outputs = Outputs(html=html, junit=junit, markdown=markdown, json=json_out)
        outputs.check()
        cap = _capacity(requests_per_day, peak_factor, output_tokens)
        stored = api.report(list(run_dirs), gate_cfg, trust_edited_items, log=_log)
        table = speed_table(stored, cap)
        view = _print_report(stored, started, table, html=html is not None)
        return _finish(stored, outputs, outputs.write(stored, table, time.perf_counter() - started, _log, view))

    code = _guard(go)
    raise typer.Exit(code)


@app.command()
def sweep(
    base: Path = typer.Argument(..., help="The base configuration: the baseline, and the template of every point."),
    set_: list[str] = typer.Option(..., "--set", help="KEY.PATH=V1,V2,... one candidate per value (several --set "
                                   "give every combination), e.g. acceleration.kv_cache.quant=int2,int3,int4."),
    out: Path = out_option,
    limit: Optional[int] = limit_option,
    gate: Optional[Path] = typer.Option(None, "--gate", help="Gate rules YAML for every point."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the full comparison as JSON."),
    html: Optional[Path] = html_option,
) -> None:
    """Run one candidate per knob value against BASE and print accuracy and speed against the knob.

    Exit code as compare: 1 when any point fails the gate, 4 when one is incomplete.
    """
    started = time.perf_counter()

    def go() -> int:
        from rich.table import Table

        from evalrun.evals.gate import load_gate_file
        from evalrun.evals.speed import run_timing
        from evalrun.evals.sweep import sweep_points
        from evalrun.reports.terminal import status_markup

        base_cfg, points = sweep_points(base, set_)
        gate_cfg = load_gate_file(gate) if gate else None
        outputs = Outputs(html=html, json=json_out)
        outputs.check()
        report = api.compare(base_cfg, [p.config for p in points], out=out, limit=limit,
                             progress_factory=_RichProgress, log=_log, gate=gate_cfg)
        packs = [pc.pack for pc in report.comparisons[0].packs] if report.comparisons else []
        table = Table(title=f"sweep of {escape(base_cfg.name)}: accuracy and speed against the knob", title_justify="left")
        for col in [*(k for k in points[0].values), *(f"{p} acc %" for p in packs), "delta (pts)", "harmful",
                    "s / item", "speedup", "gate"]:
            table.add_column(escape(col), justify="right")
        _, base_s, _ = run_timing(report.baseline)
        base_row = ["baseline" for _ in points[0].values]
        base_row += [f"{100 * pc.baseline_accuracy:.1f}" for pc in report.comparisons[0].packs]
        table.add_row(*base_row, "-", "-", f"{base_s:.2f}" if base_s else "-", "1.00x", "-")
        for point, result, comparison, verdict in zip(points, report.candidates, report.comparisons, report.verdicts):
            _, s, _ = run_timing(result)
            n = sum(pc.n for pc in comparison.packs)
            delta = sum(pc.delta_points * pc.n for pc in comparison.packs) / n if n else 0.0
            emulated = bool(result.manifest.emulated)
            speed = "emulated" if emulated else (f"{base_s / s:.2f}x" if s and base_s else "-")
            table.add_row(*(escape(str(v)) for v in point.values.values()),
                          *(f"{100 * pc.candidate_accuracy:.1f}" for pc in comparison.packs),
                          f"{delta:+.1f}", str(len(comparison.harmful)), f"{s:.2f}" if s else "-", speed,
                          status_markup(verdict.status))
        console.print(table)
        return _finish(report, outputs, outputs.write(report, speed_table(report), time.perf_counter() - started, _log))

    code = _guard(go)
    raise typer.Exit(code)


@app.command()
def rescore(
    run_dirs: list[Path] = typer.Argument(..., help="Stored run directories (runs/<name>-<key12>/)."),
    trust_edited_items: bool = trust_option,
) -> None:
    """Score stored runs again from their items and generations, without loading a model.

    Writes scores.jsonl into each run directory and prints the metrics.
    """
    from evalrun.reports.terminal import render_pack_metrics

    def go() -> None:
        for run_dir in run_dirs:
            result = api.rescore(run_dir, trust_edited_items, log=_log)
            name = result.manifest.name or run_dir.name
            render_pack_metrics(console, name, result.metrics)
            if result.unanswered:
                console.print(f"[yellow]note:[/] {len(result.unanswered)} item(s) have no stored generation yet")
            console.print(f"scores written to {escape(str(result.run_dir / 'scores.jsonl'))}")

    _guard(go)


def _type_text(annotation: object) -> str:
    """A settings type as a user writes it: the allowed values of a Literal, else the type's name."""
    from typing import Literal, get_args, get_origin

    if get_origin(annotation) is Literal:
        return " | ".join(str(a) for a in get_args(annotation))
    args = get_args(annotation)
    if args:
        return " | ".join(_type_text(a) for a in args if a is not type(None)) + (" | none" if type(None) in args else "")
    return getattr(annotation, "__name__", str(annotation))


def _settings_lines(model: type, prefix: str = "") -> list[str]:
    """One line per setting; nested settings models are expanded as dotted keys."""
    from pydantic import BaseModel

    lines: list[str] = []
    for field, f in model.model_fields.items():
        nested = next((a for a in (f.annotation, *get_args(f.annotation))
                       if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if nested is not None:
            lines.append(f"{prefix}{field}: mapping" + (" (required)" if f.is_required() else " (optional)"))
            lines.extend(_settings_lines(nested, f"{prefix}{field}."))
            continue
        default = " (required)" if f.is_required() else f" (default {f.get_default(call_default_factory=True)!r})"
        lines.append(f"{prefix}{field}: {_type_text(f.annotation)}{default}")
    return lines


@app.command()
def accelerations() -> None:
    """Acceleration methods with their settings (defaults) and whether they are emulated."""
    from rich.table import Table

    from evalrun.runners.accel import all_methods

    table = Table(title="accelerations (acceleration: {KEY: {settings}})", title_justify="left")
    for col in ("key", "settings (default)", "emulated", "description"):
        table.add_column(col)
    for name, cls in sorted(all_methods().items()):
        settings = "\n".join(_settings_lines(cls.settings_model))
        table.add_row(name, escape(settings), "yes — no speed claim" if cls.emulated else "no", escape(cls.description))
    console.print(table)


packs_app = typer.Typer(help="List task packs and export their items.", no_args_is_help=True)
app.add_typer(packs_app, name="packs")


@packs_app.command("list")
def packs_list() -> None:
    """Name, version, parameters (with defaults) and purpose of every pack."""
    from rich.table import Table

    from evalrun.tasks import all_packs

    table = Table(title="task packs", title_justify="left")
    for col in ("pack", "version", "parameters (default)", "description"):
        table.add_column(col)
    for spec in all_packs().values():
        params = "\n".join(
            f"{name} ({'required' if f.is_required() else f.get_default(call_default_factory=True)!r})"
            for name, f in spec.params.model_fields.items()
        )
        table.add_row(spec.name, spec.version, escape(params), escape(spec.description))
    console.print(table)


def _parse_params(pairs: list[str]) -> dict:
    import yaml

    params: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            _fail(EXIT_USAGE, f"--param {pair!r}: expected KEY=VALUE, e.g. lengths=[512,1024]")
        try:
            params[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            _fail(EXIT_USAGE, f"--param {key}: cannot read value {value!r}")
    return params


@packs_app.command("export")
def packs_export(
    pack: str = typer.Argument(..., help="Pack name (see `evalrun packs list`)."),
    param: list[str] = typer.Option([], "--param", help="Pack parameter KEY=VALUE (YAML value); repeatable."),
    out: Path = typer.Option(..., "--out", help="Write the items here as JSON Lines."),
    model: str = typer.Option("smollm2-135m", "--model", help="Model whose tokenizer measures context lengths."),
) -> None:
    """Write a pack's items exactly as a run would see them (for review and determinism checks)."""

    def go() -> None:
        items = api.export_pack(pack, _parse_params(param), model)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as fh:
            for it in items:
                fh.write(it.model_dump_json() + "\n")
        console.print(f"{len(items)} items written to {escape(str(out))}")

    _guard(go)


def main() -> None:
    try:
        app()
    except SystemExit:
        raise
    except Exception as exc:  # last resort: never a traceback for the user, but say what broke
        err_console.print(f"[bold red]internal error:[/] {escape(type(exc).__name__)}: {escape(str(exc))}")
        sys.exit(EXIT_RUNTIME)


if __name__ == "__main__":
    main()
