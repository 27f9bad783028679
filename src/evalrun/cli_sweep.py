"""`evalrun sweep ... --load KNOB=V1,...` (the accuracy sweep, --set, is in cli.py), and which options go with
which kind of sweep, checked before any config is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from evalrun.cli_app import _log, console, err_console, make_progress
from evalrun.contract.errors import EXIT_PASS, EXIT_RUNTIME
from evalrun.cli_outputs import Outputs, json_ready, write_outputs
from evalrun.evals.files import ConfigError

if TYPE_CHECKING:
    from evalrun.evals.timing import SLO

LOAD_HELP = ("KNOB=V1,V2,...: run every config at each value and report its throughput-latency curve and the "
             "best setting: batch_size (hf runner), concurrency or request_rate (openai runner, requests/s, "
             "Poisson arrivals). Instead of --set.")
SLO_HELP = ("With --load: goodput and the best setting under these SLOs, e.g. ttft=500ms,tpot=50ms,e2el=10s "
            "(a bare number is milliseconds).")
WORKLOAD_HELP = ("With --load: replace every config's tasks with the latency pack at these shapes: short "
                 "(~200 tokens in, 300 out), long (~2,000 in, 1,000 out) or NAME:IN:OUT; default: the "
                 "configs' own tasks.")
COUNT_HELP = "With --workload: items per shape (default 8)."
USAGE = "evalrun sweep BASE --set KEY.PATH=V1,V2,... | evalrun sweep BASE [CONFIG ...] --load KNOB=V1,V2,..."


def check_usage(set_: list[str] | None, load: str | None, configs: list[Path] | None, slo: str | None,
                workload: str | None, count: int | None, gate: Path | None, html: Path | None) -> None:
    """Exactly one of --set and --load, and only the options that kind of sweep reads: a usage
    error (exit 2, as every bad option of this CLI) otherwise."""
    if bool(set_) == bool(load):
        raise ConfigError("give exactly one of --set KEY.PATH=V1,V2,... (accuracy against BASE) or "
                          "--load KNOB=V1,V2,... (throughput and latency against the load); usage: " + USAGE)
    if load and gate is not None:
        raise ConfigError("--gate: only for --set (an accuracy sweep), not --load; usage: " + USAGE)
    if not load:
        wrong = [name for name, v in (("more configs after BASE", configs), ("--slo", slo),
                                      ("--workload", workload), ("--count", count)) if v]
        if wrong:
            raise ConfigError(f"{', '.join(wrong)}: only for --load, not --set; usage: " + USAGE)
    if count is not None and not workload:
        raise ConfigError("--count is the items per shape of --workload: give --workload too")


def slo_given(slo: str | None) -> "SLO | None":
    """--slo, checked before any work (exit 2 naming the option)."""
    from evalrun.evals.timing import SLOError, parse_slo

    try:
        return parse_slo(slo) if slo else None
    except SLOError as exc:
        raise ConfigError(str(exc), path="--slo") from None


def run_load(base: Path, configs: list[Path], load: str, slo: str | None, workload: str | None,
             count: int | None, out: Path, limit: int | None, outputs: Outputs) -> int:
    """The load sweep, validated first; exit 0, or 3 when an output could not be written."""
    from evalrun.evals import api
    from evalrun.evals.config import DEFAULT_COUNT, parse_load, parse_workload
    from evalrun.reports.sweep import load_sweep_html, load_sweep_markdown, render_load_sweep

    knob, values = parse_load(load)
    cfgs = [api.load(p) for p in [base, *configs]]
    chosen = slo_given(slo)
    shapes = parse_workload(workload, count or DEFAULT_COUNT) if workload else None
    outputs.check()
    sweep = api.load_sweep(cfgs, knob, values, chosen, out=out, limit=limit, log=_log,
                           progress_factory=make_progress, workload=shapes)
    render_load_sweep(console, sweep)
    md = load_sweep_markdown(sweep)
    jobs = [("JSON", outputs.json, lambda: json.dumps(json_ready(sweep.model_dump(mode="json")), indent=2,
                                                      allow_nan=False) + "\n"),
            ("Markdown summary", outputs.markdown, lambda: md),
            ("HTML report", outputs.html, lambda: load_sweep_html(sweep, chosen))]
    failures = write_outputs(jobs, md, _log)
    for line in failures:
        err_console.print(f"[bold red]error:[/] {escape(line)}")
    return EXIT_RUNTIME if failures else EXIT_PASS
