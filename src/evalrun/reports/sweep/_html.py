"""A load sweep as a self-contained HTML page: each config's latency-throughput curves drawn
by evalrun (inline SVG, no script, no external anything) and its table. Config names are
untrusted text: every value goes through markupsafe's escaping, and the page through
reports.text (no control character, bidi override or lone surrogate)."""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup, escape

from evalrun.evals.config import value_label
from evalrun.evals.run import LoadSweep
from evalrun.evals.timing import SLO
from evalrun.reports.sweep._tables import COLUMNS_NOTE, _cells, _columns, notes, sentence, title
from evalrun.evals.files import write_atomic
from evalrun.reports.text import safe_text
from evalrun.reports.charts import Curve, CurvePoint, latency_throughput_curves

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; connect-src 'none'; base-uri 'none'; "
       "form-action 'none'")
STYLE = ("body{font-family:sans-serif;margin:1.5rem;max-width:1200px}table{border-collapse:collapse;margin:.5rem 0}"
         "td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:right}.best{font-weight:bold;background:#eef8ee}"
         ".charts{display:flex;flex-wrap:wrap;gap:1rem}figure{margin:0;flex:1 1 520px;max-width:680px}"
         ".meta{color:#555}")
# (latency metric, its SLO, throughput on x): what a serving team tunes against
PICTURES = (("tpot", "p99", "output_throughput", "output tokens/s"), ("ttft", "p99", "request_throughput", "requests/s"),
            ("e2el", "p99", "request_throughput", "requests/s"))


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
    head = "".join(f"<th>{escape(c)}</th>" for c in _columns(curve))
    best = ' class="best"'
    rows = "".join(f"<tr{best if curve.best == k else ''}>"
                   + "".join(f"<td>{escape(c)}</td>" for c in _cells(curve, k, p)) + "</tr>"
                   for k, p in enumerate(curve.points))
    return Markup(f"<table><caption>{escape(title(curve))}</caption><thead><tr>{head}</tr></thead>"
                  f"<tbody>{rows}</tbody></table>")


def load_sweep_html(sweep: LoadSweep, slo: SLO | None = None) -> str:
    parts = [f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
             f"<title>{escape(f'evalrun load sweep: {sweep.knob}')}</title><style>{STYLE}</style></head><body>",
             f"<h1>{escape(f'Load sweep over {sweep.knob}')}</h1>"]
    if sweep.workload:
        parts.append(f"<p class=\"meta\">workload: {escape(sweep.workload)}</p>")
    parts.append("<div class=\"charts\">" + "".join(f"<figure>{svg}</figure>" for svg in curves_svg(sweep, slo))
                 + "</div>")
    for i, curve in enumerate(sweep.curves):
        parts.append(str(_table(sweep, i)))
        parts += [f"<p class=\"meta\">note: {escape(line)}</p>" for line in notes(curve)]
        parts.append(f"<p><strong>{escape(sentence(curve))}</strong></p>")
    parts.append(f"<p class=\"meta\">{escape(COLUMNS_NOTE)}</p></body></html>\n")
    return safe_text("".join(parts))


def write_load_sweep_html(sweep: LoadSweep, path: Path, slo: SLO | None = None) -> Path:
    return write_atomic(path, load_sweep_html(sweep, slo))
