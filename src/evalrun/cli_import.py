"""`evalrun import lm-eval|inspect`: results teams already have, stored as runs to gate (docs/imports.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import typer
from rich.markup import escape

from evalrun.cli_app import _guard, _log, console
from evalrun.evals.files import ConfigError

if TYPE_CHECKING:
    from evalrun.evals.imports import Format

import_app = typer.Typer(help="Store lm-eval sample logs or Inspect eval logs as runs, to pair and gate them "
                         "(`evalrun report --baseline NAME --candidate NAME`).", no_args_is_help=True)

name_option = typer.Option(..., "--name", help="The run's name: stored as OUT/<name>-<key12>/, where the key hashes "
                           "the imported content (the same files give the same run).")
out_option = typer.Option(Path("runs"), "--out", help="Run store directory.")
field_option = typer.Option(None, "--field", help="TASK=KIND: score TASK's response against its target with evalrun's "
                            "typed scorer (amount, number, date, id, text, enum) instead of the source's own metric; "
                            "TASK may be '*'. Repeatable.")
fields_option = typer.Option(None, "--fields", help="YAML file with `fields: {TASK: KIND or {kind, name, options}}`.")
replicates_option = typer.Option(False, "--replicates", help="Each PATH is one run of the same configuration: the "
                                 "first is stored as the run, the others as its replicates, which the gate measures "
                                 "the noise from.")


def _importer(fmt: Format, paths_help: str, doc: str) -> Callable[..., None]:
    """The command importing `fmt`: every format takes the same options, only PATHS differ."""

    def command(
        paths: list[Path] = typer.Argument(..., help=paths_help),
        name: str = name_option,
        out: Path = out_option,
        field: Optional[list[str]] = field_option,
        fields: Optional[Path] = fields_option,
        replicates: bool = replicates_option,
    ) -> None:
        from evalrun.evals.imports import import_runs, load_field_map

        def go() -> None:
            stored = import_runs(fmt, paths, name, out, load_field_map(fields, field), replicates, log=_log)
            for s in stored:
                label = name + (f"~r{s.replicate}" if s.replicate else "")
                state = "already stored" if s.reused else "imported"
                console.print(f"{escape(label)}: {state}: {s.items} items; run: {escape(str(s.dir))}")

        _guard(go)

    command.__doc__ = doc
    return command


import_app.command("lm-eval")(_importer(
    "lm-eval", "lm-eval sample logs (samples_<task>_<time>.jsonl) or directories holding them (--output_path); "
    "results_<time>.json beside them is read too.",
    """Import lm-evaluation-harness 0.4.x sample logs (`lm_eval --log_samples`) as one stored run.

    One item per (task, doc_id); each per-sample pass/fail metric (per filter) is a
    field whose outcome is lm-eval's own. Exit 2 naming the file and line for a torn,
    truncated or foreign log."""))
import_app.command("inspect")(_importer(
    "inspect", "Inspect eval logs (.eval or .json), one per task.",
    """Import Inspect AI eval logs as one stored run (needs inspect-ai: evalrun's `inspect` extra).

    One item per sample (and epoch); each scorer with pass/fail values ("C"/"I", 1/0)
    is a field whose outcome is the scorer's. Exit 2 for an unfinished or unreadable log."""))


def resolve_run(spec: Path, out: Path, log: Callable[[str], None]) -> Path:
    """A run given by directory, or by name: the one run OUT/<name>-<key12>/ recorded under that name.
    A bare name that is both a folder here and a stored run is taken as the folder when it holds a run
    (a manifest), else as the stored run: either way `log` says which, and how to name the other."""
    if "/" in str(spec):
        return spec
    found = sorted(d for d in out.glob(f"{spec}-*") if d.is_dir() and len(d.name) == len(str(spec)) + 13
                   and (d / "manifest.json").is_file())
    if spec.is_dir() and ((spec / "manifest.json").is_file() or not found):
        if found:
            log(f"{spec}: taking the run in the folder ./{spec}, not the stored run of that name "
                f"({', '.join(map(str, found))}): give its path to take it")
        return spec
    if not found:
        raise ConfigError(f"no run directory and no stored run named {str(spec)!r} under {out}", path=str(spec))
    if len(found) > 1:
        raise ConfigError(f"{len(found)} stored runs are named {str(spec)!r} under {out} "
                          f"({', '.join(d.name for d in found)}): give the directory", path=str(spec))
    if spec.is_dir():
        log(f"{spec}: taking the stored run {found[0]}: the folder ./{spec} holds no run (no manifest.json)")
    return found[0]


def runs_given(positional: list[Path] | None, baseline: Path | None, candidates: list[Path] | None,
               out: Path, log: Callable[[str], None]) -> list[Path]:
    """`report`'s runs: positional (the baseline first) or --baseline/--candidate, never both."""
    if positional and (baseline or candidates):
        raise ConfigError("give the runs either as arguments or with --baseline/--candidate, not both")
    given = list(positional or []) if positional else [*([baseline] if baseline else []), *(candidates or [])]
    if (not positional and (baseline is None or not candidates)) or len(given) < 2:
        raise ConfigError("give the baseline's run and at least one candidate's (--baseline RUN --candidate RUN)")
    return [resolve_run(p, out, log) for p in given]
