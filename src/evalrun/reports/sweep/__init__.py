"""A load sweep's curves: tables for the terminal and Markdown, and a self-contained HTML page."""

from __future__ import annotations

from evalrun.reports.sweep._tables import load_sweep_markdown, load_table, render_load_sweep
from evalrun.reports.sweep._html import load_sweep_html

__all__ = [
    "load_sweep_html", "load_sweep_markdown", "load_table", "render_load_sweep",
]
