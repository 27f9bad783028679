"""The report in each output format; each lays out the view model, none computes. `html` (jinja2) is
imported by name, so that a command printing to the terminal does not load it."""

from __future__ import annotations

from evalrun.reports.formats._markdown import md_cell, render_markdown, render_speed_markdown
from evalrun.reports.formats._junit import junit_xml, render_junit
from evalrun.reports.formats._terminal import render_pack_metrics, render_speed, render_view, status_markup
from evalrun.reports.formats._summary import report_json
from evalrun.reports.formats._no_verdict import NoVerdict

__all__ = ["NoVerdict", "junit_xml", "md_cell", "render_junit", "render_markdown", "render_pack_metrics",
           "render_speed", "render_speed_markdown", "render_view", "report_json", "status_markup"]
