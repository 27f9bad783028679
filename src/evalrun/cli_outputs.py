"""The files a comparison writes and the terminal report beside them: each written on its own, one that fails never
stopping the others, and from the check on never an earlier run's verdict (docs/commands.md, 'Output files')."""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from evalrun.cli_app import failure_of
from evalrun.contract.errors import EXIT_RUNTIME, EXIT_USAGE
from evalrun.evals.files import ConfigError, write_atomic
from evalrun.reports.formats import NoVerdict
from evalrun.reports.text import output_problem, safe_tree

if TYPE_CHECKING:
    from evalrun.evals.api import CompareReport
    from evalrun.evals.speed import SpeedTable
    from evalrun.reports.view.model import ReportView

Job = tuple[str, "Path | None", Callable[[], str]]


def json_ready(value: Any) -> Any:
    """NaN and infinities as null (strict JSON parsers refuse `NaN`), every string made safe to show."""
    return safe_tree(_finite(value))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return [_finite(v) for v in value] if isinstance(value, (list, tuple)) else value


@dataclass
class Outputs:
    html: Path | None = None
    junit: Path | None = None
    markdown: Path | None = None
    json: Path | None = None
    # paths this command has claimed and not yet written its verdict to
    _pending: set[Path] = field(default_factory=set, init=False, repr=False)

    def named(self) -> dict[str, Path]:
        return {f"--{k}": v for k, v in (("html", self.html), ("junit", self.junit), ("markdown", self.markdown),
                                          ("json", self.json)) if v is not None}

    def check(self) -> None:
        check_outputs(self.named())

    def claim(self) -> None:
        """`check`, then a "running" report in place of every file already there, so no earlier verdict
        survives this run, even one that is killed (exit 2 naming the file when one cannot be written)."""
        self.check()
        note = NoVerdict.running()
        for option, path in self.named().items():
            if path.exists() or path.is_symlink():
                try:
                    write_atomic(path, _no_verdict(note, option))
                except OSError as exc:
                    raise ConfigError(f"cannot be written: {exc.strerror or exc}", file=path, path=option) from None
            self._pending.add(path)

    def fail(self, reason: str, exit_code: int, only: Path | None = None) -> list[str]:
        """Every claimed path (or `only`) this run has not written its verdict to gets a report saying why there
        is none (after a usage error, exit 2: no file); one line per path that could not take it."""
        note = NoVerdict.failed(reason, exit_code)
        failures = []
        for option, path in self.named().items():
            if path not in self._pending or only not in (None, path):
                continue
            try:
                if exit_code == EXIT_USAGE:
                    path.unlink(missing_ok=True)
                else:
                    write_atomic(path, _no_verdict(note, option))
            except Exception as exc:  # a "running" report stays: still no verdict there
                failures.append(f"{path}: report of the failure not written: {type(exc).__name__}: {exc}")
        return failures

    def guarded(self, fn: Callable[[], int]) -> Callable[[], int]:
        """`fn`, with the claimed paths given a failure report when it raises (the exception goes on)."""
        def run() -> int:
            try:
                return fn()
            except BaseException as exc:
                reason, code = failure_of(exc)
                if self._pending and code != 0:
                    self.fail(reason, code)
                raise
        return run

    def write(self, report: "CompareReport", table: "SpeedTable", seconds: float,
              log: Callable[[str], None], view: "ReportView | None" = None,
              terminal: Callable[["ReportView"], None] | None = None) -> list[str]:
        """The terminal report and every requested output from one view; one line per output that failed.
        The page-only parts of the view are built inside the HTML job, so a failure there costs the page alone."""
        from evalrun.reports.formats import junit_xml, render_markdown, report_json
        from evalrun.reports.formats.html import render_html_text
        from evalrun.reports.view import build_view, with_page

        view = view or build_view(report, speed=table, html=False)
        markdown = functools.cache(lambda: render_markdown(view))
        failures: list[str] = []
        if terminal is not None:
            try:
                terminal(view)
            except Exception as exc:  # the files still get written
                failures.append(f"<stdout>: terminal report not printed: {type(exc).__name__}: {exc}")
        jobs: list[Job] = [
            ("JUnit XML", self.junit, lambda: junit_xml(view, seconds)),
            ("Markdown summary", self.markdown, markdown),
            ("JSON", self.json, lambda: json.dumps(json_ready(report_json(view)), indent=2, default=str,
                                                   allow_nan=False) + "\n"),
            ("HTML report", self.html, lambda: render_html_text(with_page(view, report))),
        ]
        return failures + write_outputs(jobs, markdown, log, self._written)

    def _written(self, path: Path, failed: str | None) -> None:
        """After one output: done when written; a failure report in its place when it failed."""
        if failed is None:
            self._pending.discard(path)
        else:
            self.fail(failed, EXIT_RUNTIME, only=path)


def check_outputs(named: dict[str, Path], run_dirs: list[Path] | None = None) -> None:
    """Exit 2 before any work for a path that cannot take its file, one inside one of `run_dirs` (export
    never writes into a run), or one path given twice."""
    runs = [d.resolve() for d in run_dirs or []]
    seen: dict[Path, str] = {}
    for option, path in named.items():
        problem = output_problem(path)
        if problem is None and any(path.resolve().is_relative_to(d) for d in runs):
            problem = "is inside a run directory; export never writes into a run"
        if problem:
            raise ConfigError(problem, file=path, path=option)
        resolved = path.resolve()
        if resolved in seen:
            raise ConfigError(f"the same file is also given to {seen[resolved]}", file=path, path=option)
        seen[resolved] = option


def _no_verdict(note: NoVerdict, option: str) -> str:
    return {"--html": note.html, "--junit": note.junit, "--markdown": note.markdown, "--json": note.json}[option]()


def write_outputs(jobs: list[Job], markdown: str | Callable[[], str], log: Callable[[str], None],
                  done: Callable[[Path, str | None], None] | None = None) -> list[str]:
    """Each (what, path, render) whose path is set, and the Markdown appended to $GITHUB_STEP_SUMMARY when set;
    one line per output that failed. `done(path, failure or None)` after each."""
    failures: list[str] = []
    for what, path, render in jobs:
        if path is None:
            continue
        failed = None
        try:
            write_atomic(path, render())
            log(f"{what} written to {path}")
        except Exception as exc:  # one output's failure must not cost the others
            failed = f"{path}: {what} not written: {type(exc).__name__}: {exc}"
            failures.append(failed)
        if done is not None:
            done(path, failed)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            text = markdown() if callable(markdown) else markdown
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            failures.append(f"{summary}: GITHUB_STEP_SUMMARY not appended: {exc}")
        except Exception as exc:  # the Markdown could not be rendered
            failures.append(f"{summary}: GITHUB_STEP_SUMMARY not appended: {type(exc).__name__}: {exc}")
    return failures
