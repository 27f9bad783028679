"""The HTML report: one self-contained file, readable offline and without JavaScript (docs/html-report.md).

Templates autoescape every value; the only unescaped insertions are our static script and stylesheet and
the browser's data as JSON with `<`, `>` and `&` as \\u escapes. The browser's data is neutralised
(reports.text) before it is encoded, since JSON escapes would hide its characters from the page's pass.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
from types import SimpleNamespace
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from evalrun.evals.gate import INCOMPLETE_NOTE, STATUS_TEXT
from evalrun.reports.text import drift_text, safe_text, safe_tree, units
from evalrun.reports.view.model import ReportView
from evalrun.evals.files import write_atomic

TEMPLATES = Path(__file__).parents[1] / "templates"
# a rule's row in the verdict table: each status its own look (an untestable rule is not green)
ROW_CLASS = {"pass": "ok", "fail": "bad", "incomplete": "gap", "untestable": "untestable"}


def json_for_script(value: Any) -> str:
    """JSON safe inside a <script type="application/json"> element: no character can end the element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)
    env.filters.update(num=units.num, pct=units.pct, ci=units.ci, p=units.p_value, g=units.g, size=units.size,
                       secs=units.seconds, rate=units.rate, ratio=units.ratio, dpts=units.delta_points,
                       divergence=units.divergence_cell)
    env.globals.update(flip_status=units.flip_status, speedup_cell=units.speedup_cell, latency_cell=units.latency_cell,
                       goodput_cell=units.goodput_cell, load_cell=units.load_cell,
                       definitions_note=units.definitions_note,
                       memory_saved_cell=units.memory_saved_cell, accuracy_cell=units.accuracy_cell,
                       server_cell=units.server_cell)
    return env


_DRIFT = SimpleNamespace(headers=drift_text.HEADERS, rows=drift_text.rows, cost=drift_text.cost_text,
                         effective=drift_text.effective_text)


def render_html_text(data: ReportView) -> str:
    script = (TEMPLATES / "browser.js").read_text(encoding="utf-8")
    style = (TEMPLATES / "style.css").read_text(encoding="utf-8")
    if "</" in script or "</" in style:
        raise ValueError("the page's static script and stylesheet must not contain '</'")
    if not re.fullmatch(r"[A-Za-z0-9+/=]*", data.texts_blob):
        raise ValueError("texts_blob must be base64")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; img-src data:; "
           "connect-src 'none'; base-uri 'none'; form-action 'none'")
    return safe_text(_environment().get_template("report.html.j2").render(
        data=data, csp=csp, status_text=STATUS_TEXT, row_class=ROW_CLASS, incomplete_note=INCOMPLETE_NOTE,
        script=Markup(script), style=Markup(style), drift=_DRIFT,
        browser_json=Markup(json_for_script(safe_tree(dataclasses.asdict(data.browser)) if data.browser else {})),
        # base64: only [A-Za-z0-9+/=], nothing to escape (its texts were made safe before encoding)
        texts_blob=Markup(data.texts_blob),
    ))


def render_html(data: ReportView, path: str | Path) -> Path:
    return write_atomic(path, render_html_text(data))
