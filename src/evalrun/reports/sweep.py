"""A load sweep's curves, one table per config, in the terminal, as Markdown and as a self-contained HTML
page (docs/speed.md). Config names and notes are untrusted: escaped for each output, and the page is
neutralised (reports.text)."""

from __future__ import annotations

from markupsafe import Markup, escape as html_escape
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evalrun.evals.timing import METRICS, SLO
from evalrun.evals.config import value_label
from evalrun.evals.run import LoadCurve, LoadPoint, LoadSweep
from evalrun.reports.text import safe_text, units
from evalrun.reports.formats import md_cell
from evalrun.reports.charts import Curve, CurvePoint, latency_throughput_curves

__all__ = ["load_sweep_html", "load_sweep_markdown", "load_table", "render_load_sweep"]

PCTS = ("p50", "p99")
BEST = "★"
_LABEL = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "E2EL"}

COLUMNS_NOTE = ("req/s and out tok/s: completed requests and output tokens over the point's wall clock; "
                "TTFT: time to first token; TPOT: (E2EL - TTFT) / (output tokens - 1) per request; ITL: every "
                "gap between output chunks; E2EL: time to the last token (vLLM bench serve definitions); "
                "good: requests meeting every SLO (share of all, and per second).")


def sig(x: float | None) -> str:
    """A rate to three significant figures (0.0042, 2.27, 83.8), whole numbers from 100 on."""
    if x is None:
        return units.DASH
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _columns(curve: LoadCurve) -> list[str]:
    cols = [curve.knob, "requests", "req/s", "out tok/s"]
    cols += [f"{_LABEL[m]} {q}" for m in METRICS for q in PCTS]
    if curve.slo:
        cols += ["good %", "good req/s"]
    return cols


def _cells(curve: LoadCurve, i: int, p: LoadPoint) -> list[str]:
    """Plain text cells (no markup), in _columns' order."""
    failed = f" ({p.failed} failed)" if p.failed else ""
    mark = f" {BEST}" if curve.best == i else ""
    cells = [value_label(p.value) + mark, f"{p.requests}{failed}", sig(p.request_throughput), sig(p.output_throughput)]
    cells += [units.seconds(getattr(getattr(p, m), q)) for m in METRICS for q in PCTS]
    if curve.slo:
        g = p.goodput
        cells += [units.pct(g.share, 0) if g else units.DASH, sig(g.rate) if g else units.DASH]
    return cells


def notes(curve: LoadCurve) -> list[str]:
    """Where a point ran at less than the load asked: one line each, under the table."""
    return [f"{curve.knob} {value_label(p.value)}: {p.note}" for p in curve.points if p.note]


def title(curve: LoadCurve) -> str:
    return f"load sweep of {curve.config}: throughput and latency against {curve.knob}"


def sentence(curve: LoadCurve) -> str:
    """The per-config line, e.g. 'latency: best batch_size 4: 3.1 req/s, 2.9 good req/s under ttft<=500ms'."""
    return f"{curve.config}: {curve.summary}"


def load_table(curve: LoadCurve) -> Table:
    table = Table(title=escape(title(curve)), title_justify="left",
                  caption=escape(f"{BEST} best: the most good req/s under the SLO ({curve.slo})" if curve.slo else
                                 f"{BEST} best: the highest req/s (no SLO given)"),
                  caption_justify="left")
    for col in _columns(curve):
        table.add_column(escape(col), justify="right", no_wrap=True)
    for i, p in enumerate(curve.points):
        cells = [escape(c) for c in _cells(curve, i, p)]
        table.add_row(*cells, style="bold green" if curve.best == i else None)
    return table


def render_load_sweep(console: Console, sweep: LoadSweep) -> None:
    """Each config's table and its sentence; the columns' meaning once at the end."""
    for curve in sweep.curves:
        console.print()
        console.print(load_table(curve))
        for line in notes(curve):
            console.print(f"note: {escape(line)}")
        style = "yellow" if curve.best is None else "bold"
        console.print(f"[{style}]{escape(sentence(curve))}[/]")
    if sweep.workload:
        console.print(f"workload: {escape(sweep.workload)}")
    console.print(f"[dim]{escape(COLUMNS_NOTE)}[/]")


def load_sweep_markdown(sweep: LoadSweep) -> str:
    """A section per config: its table and its sentence."""
    lines = [f"## Load sweep: {md_cell(sweep.knob)}", ""]
    if sweep.workload:
        lines += [f"Workload: {md_cell(sweep.workload, 200)}", ""]
    for curve in sweep.curves:
        cols = _columns(curve)
        lines += [f"### {md_cell(curve.config)}", "", f"SLO: {md_cell(curve.slo)}; {BEST} best: the most good req/s"
                  if curve.slo else f"No SLO given: {BEST} best is the highest request throughput.", ""]
        lines += ["| " + " | ".join(md_cell(c) for c in cols) + " |", "|" + "|".join("---:" for _ in cols) + "|"]
        for i, p in enumerate(curve.points):
            cells = [md_cell(c, 120) for c in _cells(curve, i, p)]
            if curve.best == i:
                cells = [f"**{c}**" if c else c for c in cells]
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", *(f"- {md_cell(n, 400)}" for n in notes(curve)), "", md_cell(sentence(curve), 400), ""]
    lines += [md_cell(COLUMNS_NOTE, 1000), ""]
    return "\n".join(lines)


CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; connect-src 'none'; base-uri 'none'; "
       "form-action 'none'")
STYLE = ("body{font-family:sans-serif;margin:1.5rem;max-width:1200px}table{border-collapse:collapse;margin:.5rem 0}"
         "td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:right}.best{font-weight:bold;background:#eef8ee}"
         ".charts{display:flex;flex-wrap:wrap;gap:1rem}figure{margin:0;flex:1 1 520px;max-width:680px}"
         ".meta{color:#555}")
# (latency metric, its SLO, throughput on x): what a serving team tunes against
PICTURES = (("tpot", "p99", "output_throughput", "output tokens/s"),
            ("ttft", "p99", "request_throughput", "requests/s"), ("e2el", "p99", "request_throughput", "requests/s"))


def curves_svg(sweep: LoadSweep, slo: SLO | None) -> list[Markup]:
    """One chart per latency in PICTURES, every config a curve over the knob's values."""
    out = []
    for metric, q, x_key, x_title in PICTURES:
        curves = []
        for curve in sweep.curves:
            pts = [CurvePoint(x=getattr(p, x_key), y=1000 * getattr(getattr(p, metric), q),
                              label=f"{sweep.knob} {value_label(p.value)}",
                              meets_slo=None if p.goodput is None else p.goodput.good == p.goodput.requests)
                   for p in curve.points if getattr(p, x_key) and getattr(getattr(p, metric), q) is not None]
            curves.append(Curve(series=curve.config, points=pts, best=curve.best if len(pts) == len(curve.points)
                                else None))
        limit = getattr(slo, metric, None) if slo is not None else None
        out.append(latency_throughput_curves(
            curves, x_title, f"{metric.upper()} {q} (ms)", f"{metric.upper()} {q} against {x_title}, per {sweep.knob}",
            slo=1000 * limit if limit else None, slo_label=f"SLO {metric} {1000 * limit:g} ms" if limit else ""))
    return out


def _table(sweep: LoadSweep, i: int) -> Markup:
    curve = sweep.curves[i]
    head = "".join(f"<th>{html_escape(c)}</th>" for c in _columns(curve))
    best = ' class="best"'
    rows = "".join(f"<tr{best if curve.best == k else ''}>"
                   + "".join(f"<td>{html_escape(c)}</td>" for c in _cells(curve, k, p)) + "</tr>"
                   for k, p in enumerate(curve.points))
    return Markup(f"<table><caption>{html_escape(title(curve))}</caption><thead><tr>{head}</tr></thead>"
                  f"<tbody>{rows}</tbody></table>")


def load_sweep_html(sweep: LoadSweep, slo: SLO | None = None) -> str:
    parts = [f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
             f"<title>{html_escape(f'evalrun load sweep: {sweep.knob}')}</title><style>{STYLE}</style></head><body>",
             f"<h1>{html_escape(f'Load sweep over {sweep.knob}')}</h1>"]
    if sweep.workload:
        parts.append(f"<p class=\"meta\">workload: {html_escape(sweep.workload)}</p>")
    parts.append("<div class=\"charts\">" + "".join(f"<figure>{svg}</figure>" for svg in curves_svg(sweep, slo))
                 + "</div>")
    for i, curve in enumerate(sweep.curves):
        parts.append(str(_table(sweep, i)))
        parts += [f"<p class=\"meta\">note: {html_escape(line)}</p>" for line in notes(curve)]
        parts.append(f"<p><strong>{html_escape(sentence(curve))}</strong></p>")
    parts.append(f"<p class=\"meta\">{html_escape(COLUMNS_NOTE)}</p></body></html>\n")
    return safe_text("".join(parts))

