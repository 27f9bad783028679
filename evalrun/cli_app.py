"""What every `evalrun` command module shares: the typer app, the consoles, the
exit codes, the progress bar and the mapping of the stages' exceptions to one
line and an exit code. The commands live in cli.py (the comparison workflow) and
cli_catalog.py (listing packs and accelerations, exporting items).
"""

from __future__ import annotations

import os
import sys

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from evalrun.evals.config import ConfigError
from evalrun.evals.execute import RunFailed
from evalrun.evals.pairing import PairingError

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
