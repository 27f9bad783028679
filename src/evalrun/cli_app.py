"""What every `evalrun` command module shares: the typer app, the consoles, the progress display (a bar in a
terminal, plain lines in a log) and the one mapping of an exception that ends a command to its line and exit code."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Callable, TextIO, TypeVar, Union

import typer
from typer.core import TyperGroup
from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from evalrun.contract.errors import EvalrunError, exit_code_of
from evalrun.runners.openai import scrub_known
from evalrun.reports.text import SafeConsole, safe_text

if TYPE_CHECKING:
    # typer (0.2x) carries its own click: the context its group methods take
    from typer._click import Context

T = TypeVar("T")

class _Group(TyperGroup):
    """The app's command group: a bare `--ray` gets its default value before Click parses (evalrun/cli_options.py)."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        from evalrun.cli_options import fill_bare_ray

        return super().parse_args(ctx, fill_bare_ray(args))


app = typer.Typer(
    cls=_Group,
    help=(
        "evalrun — accuracy regression harness for lossy LLM inference acceleration.\n\n"
        "Run the same task packs through a baseline configuration and faster candidates, pair the answers "
        "item by item, score every field by its type, and gate on harmful flips.\n\n"
        "Exit codes: 0 passed, 1 regression found, 2 usage/config error, 3 runtime failure, "
        "4 incomplete (nothing failed, but items could not be paired or a rule could not be evaluated: never a pass)."
    ),
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    # help texts are shown as written: rich markup would take `'evalrun[ray]'` for a tag and drop it
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


keep_option = typer.Option(False, "--keep-servers", help="Leave the servers evalrun launches (`server:` in a "
                           "config) up after their runs, for debugging; each one's URL and process group are "
                           "printed. Default: each is stopped when its run ends.")
trust_option = typer.Option(False, "--trust-edited-items", help="Score a run whose items.jsonl no longer matches "
                            "the hash recorded when it ran, or whose manifest is unreadable (with a warning); "
                            "refused otherwise.")


def _console(stderr: bool = False) -> Console:
    # CI logs are not terminals: give tables room instead of rich's 80-column default.
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 160
    return SafeConsole(stderr=stderr, width=width)


console = _console()
err_console = _console(stderr=True)


class _RichProgress:
    """The execute stage's progress protocol as a rich bar with ETA."""

    def __init__(self) -> None:
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def start(self, label: str, total: int, done: int) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("elapsed"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=err_console, transient=False,
        )
        self._progress.start()
        # a progress column renders its markup itself, not through the console's render_str
        self._task = self._progress.add_task(escape(safe_text(label)), total=total, completed=done)

    def advance(self, n: int = 1) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, n)

    def note(self, text: str | None) -> None:
        """One-time preparation in words beside the label (None: back to the label alone)."""
        if self._progress is not None and self._task is not None:
            task = self._progress.tasks[0]
            label = task.fields.setdefault("label", task.description)
            self._progress.update(self._task, description=label + (f" — {escape(safe_text(text))}" if text else ""))

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def duration(seconds: float) -> str:
    """Seconds as a person reads a wait: 0.4 s, 42 s, 3 min 12 s, 1 h 05 min."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


PROGRESS_INTERVAL = 30.0  # seconds between plain progress lines, whether or not an item finished


class _PlainProgress:
    """Progress as plain lines where stderr is no terminal (a rich bar prints nothing there until it ends): one
    at the start, one every `interval` seconds from a timer thread (a slow item still shows the run is alive)."""

    def __init__(self, interval: float = PROGRESS_INTERVAL, stream: TextIO | None = None) -> None:
        self.interval = interval
        self._stream = stream
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._label, self._total, self._done, self._first, self._started = "", 0, 0, 0, 0.0
        self._note: str | None = None
        self._prep_seconds, self._prep_started = 0.0, 0.0

    def start(self, label: str, total: int, done: int) -> None:
        self._label, self._total, self._done, self._first = safe_text(label), total, done, done
        self._started = time.monotonic()
        self._note, self._prep_seconds = None, 0.0
        self._stop.clear()
        self._line("started")
        self._thread = threading.Thread(target=self._tick, name="evalrun-progress", daemon=True)
        self._thread.start()

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self._line("running")

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self._done += n

    def note(self, text: str | None) -> None:
        """One-time preparation (a compile, a conversion): said at once, and on every line while it lasts;
        its time is left out of the items' rate."""
        with self._lock:
            if text is None and self._note is not None:
                self._prep_seconds += time.monotonic() - self._prep_started
            elif text is not None and self._note is None:  # an update of the same state keeps its start
                self._prep_started = time.monotonic()
            self._note = safe_text(text) if text is not None else None
        if text is not None:
            self._line("running")

    def finish(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._line("finished" if self._done >= self._total else "stopped")

    def _line(self, state: str) -> None:
        with self._lock:
            elapsed = time.monotonic() - self._started
            made = self._done - self._first
            remaining = self._total - self._done
            stream = self._stream or sys.stderr
            if self._note is not None:
                stream.write(f"{self._label}: {self._note}: {self._done}/{self._total} items, preparing for "
                             f"{duration(time.monotonic() - self._prep_started)}, elapsed {duration(elapsed)}\n")
                stream.flush()
                return
            generating = elapsed - self._prep_seconds
            if made > 0 and generating > 0:
                per_second = made / generating
                rate = f"{per_second:.2f} items/s" if per_second >= 1 else f"{1 / per_second:.1f} s/item"
                eta = duration(remaining / per_second) if remaining else "0 s"
            else:
                rate, eta = "rate unknown (no item finished yet)", "unknown" if remaining else "0 s"
            stream.write(f"{self._label}: {state}: {self._done}/{self._total} items, {rate}, "
                         f"elapsed {duration(elapsed)}, ETA {eta}\n")
            stream.flush()


def make_progress(interval: float = PROGRESS_INTERVAL) -> Union[_RichProgress, _PlainProgress]:
    """The rich bar in a terminal; plain lines every `interval` seconds anywhere else."""
    return _RichProgress() if err_console.is_terminal else _PlainProgress(interval)


def failure_of(exc: BaseException) -> tuple[str, int]:
    """The line and exit code of an exception that ends a command: what `_guard` and the last resort print,
    and what a report without a verdict says."""
    code = exit_code_of(exc)
    if isinstance(exc, EvalrunError):
        return str(exc), code
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted: generated items are stored; run the same command again to resume", code
    if isinstance(exc, (SystemExit, typer.Exit)):
        given = exc.code if isinstance(exc, SystemExit) else exc.exit_code
        code = given if isinstance(given, int) else 1
        return f"evalrun exited with code {code} before writing a verdict", code
    return f"internal error: {type(exc).__name__}: {exc}", code


def say_failure(exc: BaseException) -> int:
    """`exc` in one line on stderr, never a traceback ("error: ..." for an evalrun error); its exit code."""
    line, code = failure_of(exc)
    label, text = ("error", line) if isinstance(exc, EvalrunError) else line.split(": ", 1)
    style = "yellow" if isinstance(exc, KeyboardInterrupt) else "bold red"
    err_console.print(f"[{style}]{label}:[/] {escape(scrub_known(text))}")
    return code


def _guard(fn: Callable[[], T]) -> T:
    """`fn`, with a stage's exception (or an interrupt) said in one line and exited with its code."""
    try:
        return fn()
    except (EvalrunError, KeyboardInterrupt) as exc:
        raise typer.Exit(say_failure(exc)) from None


def _log(message: str) -> None:
    err_console.print(escape(scrub_known(message)))
