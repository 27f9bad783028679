"""The files a comparison writes (--html, --junit, --markdown, --json and the
GitHub step summary): checked before any generation, each written atomically,
and one that fails never stops the others."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from evalrun.evals.config import ConfigError
from evalrun.reports.output import output_problem, write_atomic

if TYPE_CHECKING:
    from evalrun.evals.api import CompareReport
    from evalrun.evals.speed_table import SpeedTable
    from evalrun.reports.view.model import ReportView


def _finite(value: Any) -> Any:
    """NaN and infinities as null: JSON has no spelling for them, and strict parsers refuse `NaN`."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


@dataclass
class Outputs:
    html: Path | None = None
    junit: Path | None = None
    markdown: Path | None = None
    json: Path | None = None

    def named(self) -> dict[str, Path]:
        return {f"--{k}": v for k, v in (("html", self.html), ("junit", self.junit), ("markdown", self.markdown),
                                          ("json", self.json)) if v is not None}

    def check(self) -> None:
        """Exit 2 before any work for a path that cannot take its file, or one path given twice."""
        seen: dict[Path, str] = {}
        for option, path in self.named().items():
            problem = output_problem(path)
            if problem:
                raise ConfigError(problem, file=path, path=option)
            resolved = path.resolve()
            if resolved in seen:
                raise ConfigError(f"the same file is also given to {seen[resolved]}", file=path, path=option)
            seen[resolved] = option

    def write(self, report: "CompareReport", table: "SpeedTable", seconds: float,
              log: Callable[[str], None], view: "ReportView | None" = None) -> list[str]:
        """Write every requested output from one view (the terminal's, when given); returns one
        line per output that failed."""
        from evalrun.reports.html import render_html_text
        from evalrun.reports.junit import junit_xml
        from evalrun.reports.markdown import render_markdown
        from evalrun.reports.summary import report_json
        from evalrun.reports.view import build_view

        view = view or build_view(report, speed=table, html=self.html is not None)
        md = render_markdown(view)
        jobs: list[tuple[str, Path | None, Callable[[], str]]] = [
            ("JUnit XML", self.junit, lambda: junit_xml(view, seconds)),
            ("Markdown summary", self.markdown, lambda: md),
            ("JSON", self.json, lambda: json.dumps(_finite(report_json(view)), indent=2, default=str,
                                                   allow_nan=False) + "\n"),
            ("HTML report", self.html, lambda: render_html_text(view)),
        ]
        return write_outputs(jobs, md, log)


def write_outputs(jobs: list[tuple[str, Path | None, Callable[[], str]]], markdown: str,
                  log: Callable[[str], None]) -> list[str]:
    """Write each (what, path, render) whose path is set, and append `markdown` to
    $GITHUB_STEP_SUMMARY when set; one line per output that failed (one failing never stops the others)."""
    failures: list[str] = []
    for what, path, render in jobs:
        if path is None:
            continue
        try:
            write_atomic(path, render())
            log(f"{what} written to {path}")
        except Exception as exc:  # one output's failure must not cost the others
            failures.append(f"{path}: {what} not written: {type(exc).__name__}: {exc}")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(markdown)
        except OSError as exc:
            failures.append(f"{summary}: GITHUB_STEP_SUMMARY not appended: {exc}")
    return failures
