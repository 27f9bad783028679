"""Inline SVG charts for the HTML report: speed vs accuracy, latency vs throughput, latency CDFs. Series
differ by colour and by marker or dash (a greyscale print); unplottable values are skipped, and nothing
to draw gives a chart that says "no data". The same input gives the same bytes.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from markupsafe import Markup

from evalrun.reports.charts._svg import (
    DASHES, INK, MUTED, PALETTE, SHAPES, Frame, LegendEntry, Placer, Scale, around, axes, axis_scale, esc, finite,
    frame, legend, legend_rows, marker, nice_ticks, no_data, num, open_svg, with_zero,
)

MAX_STEPS = 400  # a CDF keeps at most this many steps: a 10,000-request run stays a few KB
MAX_DESC = 20  # items spelled out in a chart's description
GATE_FILL = "#dff2e6"


@dataclass(frozen=True)
class ScatterPoint:
    label: str  # e.g. "int4kv · docs"
    x: float  # speedup (x times), > 0
    x_low: float | None  # its interval
    x_high: float | None
    y: float  # accuracy delta in points (candidate - baseline)
    y_low: float | None
    y_high: float | None
    status: str | None = None  # "pass" | "fail" | "incomplete" | None: colours the point


@dataclass(frozen=True)
class GateRegion:
    min_speedup: float | None  # the gate passes for x >= this (None: no speed bound)
    max_drop: float | None  # and y >= -max_drop (None: no accuracy bound)


@dataclass(frozen=True)
class CurvePoint:
    x: float  # throughput, e.g. requests/s or output tokens/s
    y: float  # latency, e.g. TPOT p99 in ms
    label: str  # the knob value, e.g. "batch 4" or "8 concurrent"
    meets_slo: bool | None = None


@dataclass(frozen=True)
class Curve:
    series: str  # config name
    points: list[CurvePoint]  # in knob order; drawn as a polyline in that order
    best: int | None = None  # index of the best point under the SLO (ringed and labelled "best")


@dataclass(frozen=True)
class DistributionSeries:
    run: str
    values: list[float]  # seconds, one per request (or per gap)
    marks: dict[str, float]  # e.g. {"p50": 0.012, "p95": 0.020, "p99": 0.031}, in seconds


# status -> (colour, marker, legend text): colour for the eye, shape for greyscale
STATUS_STYLE = {"pass": ("#009e73", "circle", "pass"), "fail": ("#d55e00", "cross", "fail"),
                "incomplete": ("#777777", "square", "incomplete"), None: ("#0072b2", "diamond", "no verdict")}


Interval = tuple[float, float]
Plotted = tuple[ScatterPoint, "Interval | None", "Interval | None"]


def _g(v: float) -> str:
    return f"{v:.3g}".replace("-", "\u2212")


def _interval(low: float | None, high: float | None, positive: bool = False) -> Interval | None:
    """Both ends plottable (and > 0 for a speedup, which has no log position otherwise), in order."""
    if not (finite(low) and finite(high)):
        return None
    lo, hi = sorted((float(low), float(high)))
    return None if positive and lo <= 0 else (lo, hi)


@dataclass(frozen=True)
class _ScatterLayout:
    """Everything the scatter places, computed once so `scatter_scales` and the drawing agree."""

    plotted: list[Plotted]
    rows: list[list[tuple[float, LegendEntry]]]
    fr: Frame
    sx: Scale
    sy: Scale
    xticks: list[float]
    yticks: list[float]
    min_speedup: float | None
    max_drop: float | None


def _scatter_layout(points: list[ScatterPoint], region: GateRegion | None) -> _ScatterLayout:
    """Plottable points, the legend, and scales that hold every point, interval, x = 1, y = 0 and the gate."""
    plotted = [(p, _interval(p.x_low, p.x_high, True), _interval(p.y_low, p.y_high))
               for p in points if finite(p.x) and p.x > 0 and finite(p.y)]
    min_speedup = region.min_speedup if region and finite(region.min_speedup) and region.min_speedup > 0 else None
    max_drop = region.max_drop if region and finite(region.max_drop) else None
    statuses = {p.status if p.status in STATUS_STYLE else None for p, _, _ in plotted}
    entries = [LegendEntry(text, colour, shape=shape) for key, (colour, shape, text) in STATUS_STYLE.items()
               if key in statuses] if statuses != {None} else []
    if region is not None:
        entries.append(LegendEntry("gate passes here", "#9fd3b4", swatch=GATE_FILL))
    rows = legend_rows(entries)
    fr = frame(len(rows))
    xs = [1.0, *[v for p, xi, _ in plotted for v in (p.x, *(xi or ()))], *([min_speedup] if min_speedup else [])]
    ys = [0.0, *[v for p, _, yi in plotted for v in (p.y, *(yi or ()))], *([-max_drop] if max_drop is not None else [])]
    sx, xticks = axis_scale(xs, fr.left, fr.right, allow_log=True)
    sy, yticks = axis_scale(ys, fr.bottom, fr.top)
    return _ScatterLayout(plotted, rows, fr, sx, sy, xticks, yticks, min_speedup, max_drop)


def scatter_scales(points: list[ScatterPoint], region: GateRegion | None) -> tuple[Scale, Scale]:
    """The x and y scales `speed_accuracy_scatter` draws with (for callers and tests that place things on it)."""
    lay = _scatter_layout(points, region)
    return lay.sx, lay.sy


def _gate_rect(lay: _ScatterLayout) -> str:
    """The pass region: right of min_speedup and above -max_drop; an unbounded side runs to the plot edge."""
    fr = lay.fr
    x0 = lay.sx(lay.min_speedup) if lay.min_speedup is not None else fr.left
    y1 = lay.sy(-lay.max_drop) if lay.max_drop is not None else fr.bottom
    return (f'<rect class="ch-gate" x="{num(x0)}" y="{num(fr.top)}" width="{num(fr.right - x0)}" '
            f'height="{num(max(0.0, y1 - fr.top))}" fill="{GATE_FILL}"/>')


def _error_bar(cls: str, a: float, b: float, at: float, horizontal: bool, colour: str) -> str:
    if horizontal:
        d = f"M{num(a)} {num(at)}H{num(b)}M{num(a)} {num(at - 3)}v6M{num(b)} {num(at - 3)}v6"
    else:
        d = f"M{num(at)} {num(a)}V{num(b)}M{num(at - 3)} {num(a)}h6M{num(at - 3)} {num(b)}h6"
    return f'<path class="{cls}" d="{d}" stroke="{colour}" stroke-width="1.2" fill="none"/>'


def _point_text(p: ScatterPoint, xi: Interval | None, yi: Interval | None,
                x_title: str, y_title: str) -> str:
    x_int = f" ({_g(xi[0])} to {_g(xi[1])})" if xi else ""
    y_int = f" ({_g(yi[0])} to {_g(yi[1])})" if yi else ""
    status = f"; {p.status}" if p.status else ""
    return f"{p.label}: {x_title} {_g(p.x)}{x_int}; {y_title} {_g(p.y)}{y_int}{status}"


def speed_accuracy_scatter(points: list[ScatterPoint], region: GateRegion | None, x_title: str, y_title: str,
                           title: str) -> Markup:
    """Each config's speedup against its accuracy change, with both intervals as error bars, the
    no-speedup and no-change lines, and (given `region`) the area where the gate passes shaded."""
    lay = _scatter_layout(points, region)
    if not lay.plotted:
        return Markup(no_data(title))
    fr, sx, sy = lay.fr, lay.sx, lay.sy
    texts = [_point_text(p, xi, yi, x_title, y_title) for p, xi, yi in lay.plotted]
    label = f"{title}. {len(lay.plotted)} points, {x_title} against {y_title}."
    out = open_svg(title, label, "; ".join(texts[:MAX_DESC]), fr.height)
    if region is not None:
        out.append(_gate_rect(lay))
    out += axes(fr, sx, sy, lay.xticks, lay.yticks, x_title, y_title)
    out.append(f'<path class="ch-ref" d="M{num(sx(1.0))} {num(fr.top)}V{num(fr.bottom)}M{num(fr.left)} '
               f'{num(sy(0.0))}H{num(fr.right)}" stroke="#888888" stroke-dasharray="4 3" fill="none"/>')
    out += legend(lay.rows)
    placer = Placer((fr.left + 2, fr.top + 2, fr.right - 2, fr.bottom - 2))
    for p, _, _ in lay.plotted:
        placer.block(sx(p.x), sy(p.y), 5)
    for (p, xi, yi), text in zip(lay.plotted, texts):
        colour, shape, _ = STATUS_STYLE[p.status if p.status in STATUS_STYLE else None]
        x, y = sx(p.x), sy(p.y)
        out.append(f'<g class="ch-point"><title>{esc(text)}</title>')
        if xi:
            out.append(_error_bar("ch-err-x", sx(xi[0]), sx(xi[1]), y, True, colour))
        if yi:
            out.append(_error_bar("ch-err-y", sy(yi[0]), sy(yi[1]), x, False, colour))
        out.append(marker(shape, x, y, colour, r=4.5))
        tx, ty, anchor = placer.place(around(x, y), p.label, 10)
        out.append(f'<text class="ch-label" x="{num(tx)}" y="{num(ty)}" text-anchor="{anchor}" '
                   f'font-size="10">{esc(p.label)}</text></g>')
    out.append("</svg>")
    return Markup("".join(out))


def _drawn_curves(curves: list[Curve]) -> list[tuple[int, Curve, list[tuple[int, CurvePoint]]]]:
    """(input index, curve, its plottable points with their indices); a curve with none is left out."""
    out = []
    for i, c in enumerate(curves):
        pts = [(j, p) for j, p in enumerate(c.points) if finite(p.x) and finite(p.y)]
        if pts:
            out.append((i, c, pts))
    return out


def _curve_style(i: int) -> tuple[str, str, str]:
    return PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)], SHAPES[i % len(SHAPES)]


def _curve_marks(i: int, c: Curve, pts: list[tuple[int, CurvePoint]], sx: Scale, sy: Scale,
                 placer: Placer) -> list[str]:
    """One curve: its line, a marker per point (hollow: misses the SLO), knob labels, the best ring."""
    colour, dash, shape = _curve_style(i)
    out = [f'<g class="ch-curve"><title>{esc(c.series)}</title>']
    if len(pts) > 1:
        coords = " ".join(f"{num(sx(p.x))},{num(sy(p.y))}" for _, p in pts)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="1.8"{dash_attr}/>')
    for j, p in pts:
        x, y = sx(p.x), sy(p.y)
        slo = "" if p.meets_slo is None else "; meets the SLO" if p.meets_slo else "; misses the SLO"
        out.append(f'<g class="ch-cpoint"><title>{esc(c.series)} · {esc(p.label)}: {esc(_g(p.x))}, '
                   f'{esc(_g(p.y))}{slo}</title>{marker(shape, x, y, colour, hollow=p.meets_slo is False)}')
        tx, ty, anchor = placer.place(around(x, y), p.label, 9)
        out.append(f'<text class="ch-label" x="{num(tx)}" y="{num(ty)}" text-anchor="{anchor}" font-size="9" '
                   f'fill="{MUTED}">{esc(p.label)}</text></g>')
        if j == c.best:
            tx, ty, anchor = placer.place(around(x, y, 10), "best", 10)
            out.append(f'<g class="ch-best"><circle cx="{num(x)}" cy="{num(y)}" r="8.5" fill="none" '
                       f'stroke="{colour}" stroke-width="1.5"/><text x="{num(tx)}" y="{num(ty)}" '
                       f'text-anchor="{anchor}" font-size="10" font-weight="bold">best</text></g>')
    out.append("</g>")
    return out


def latency_throughput_curves(curves: list[Curve], x_title: str, y_title: str, title: str, slo: float | None = None,
                              slo_label: str = "") -> Markup:
    """Load sweeps: latency against throughput per config, one polyline in knob order, each point
    labelled with its knob; points that miss the SLO are hollow, the best one ringed; the SLO dashed."""
    drawn = _drawn_curves(curves)
    if not drawn:
        return Markup(no_data(title))
    slo = slo if finite(slo) else None
    entries = [LegendEntry(c.series, *_curve_style(i)) for i, c, _ in drawn] if len(drawn) > 1 else []
    if any(p.meets_slo is False for _, _, pts in drawn for _, p in pts):
        entries.append(LegendEntry("misses the SLO", MUTED, shape="circle", hollow=True))
    rows = legend_rows(entries)
    fr = frame(len(rows))
    sx, xticks = axis_scale(with_zero([p.x for _, _, pts in drawn for _, p in pts]), fr.left, fr.right)
    ys = [p.y for _, _, pts in drawn for _, p in pts] + ([slo] if slo is not None else [])
    sy, yticks = axis_scale(with_zero(ys), fr.bottom, fr.top)
    desc = [f"{c.series}: " + ", ".join(f"{p.label} {_g(p.x)}, {_g(p.y)}" for _, p in pts[:MAX_DESC])
            for _, c, pts in drawn[:MAX_DESC]]
    label = f"{title}. {len(drawn)} {'curve' if len(drawn) == 1 else 'curves'}, {y_title} against {x_title}."
    out = open_svg(title, label, "; ".join(desc), fr.height)
    out += axes(fr, sx, sy, xticks, yticks, x_title, y_title)
    out += legend(rows)
    placer = Placer((fr.left + 2, fr.top + 2, fr.right - 2, fr.bottom - 2))
    for _, _, pts in drawn:
        for _, p in pts:
            placer.block(sx(p.x), sy(p.y), 5)
    if slo is not None:
        text = slo_label or f"SLO {_g(slo)}"
        y = sy(slo)
        tx, ty, anchor = placer.place([(fr.right - 4, y - 4, "end"), (fr.right - 4, y + 12, "end")], text, 10)
        out.append(f'<g class="ch-slo"><path d="M{num(fr.left)} {num(y)}H{num(fr.right)}" stroke="{INK}" '
                   f'stroke-dasharray="6 4" stroke-width="1.2"/><text x="{num(tx)}" y="{num(ty)}" '
                   f'text-anchor="{anchor}" font-size="10">{esc(text)}</text></g>')
    for i, c, pts in drawn:
        out += _curve_marks(i, c, pts, sx, sy, placer)
    out.append("</svg>")
    return Markup("".join(out))


def format_latency(seconds: float, unit: str = "ms") -> str:
    """A latency in `unit` ("ms" or "s") to three significant digits: "31.0 ms", "4.20 ms", "312 ms"."""
    v = seconds * (1000.0 if unit == "ms" else 1.0)
    a = abs(v)
    d = 0 if a >= 100 else 1 if a >= 10 else 2 if a >= 1 else 3
    return f"{v:.{d}f} {unit}".replace("-", "\u2212")


def _steps(values: list[float]) -> list[tuple[float, float]]:
    """The ECDF's corners (value, share <= value) of sorted `values`, ties merged, thinned to
    MAX_STEPS evenly by rank (first and last kept)."""
    n = len(values)
    steps = [(v, (i + 1) / n) for i, v in enumerate(values) if i == n - 1 or values[i + 1] != v]
    if len(steps) > MAX_STEPS:
        steps = [steps[round(k * (len(steps) - 1) / (MAX_STEPS - 1))] for k in range(MAX_STEPS)]
    return steps


def _cdf_marks(k: int, s: DistributionSeries, values: list[float], unit: str, sx: Scale, sy: Scale,
               placer: Placer) -> list[str]:
    """Each percentile of `marks` as a tick on the run's curve and a label; even runs label to the
    right first and odd ones to the left, so two runs' labels stagger instead of stacking."""
    factor = 1000.0 if unit == "ms" else 1.0
    colour = PALETTE[k % len(PALETTE)]
    out = []
    for name, v in sorted(((n, m) for n, m in s.marks.items() if finite(m)), key=lambda nm: (nm[1], nm[0])):
        x, y = sx(v * factor), sy(bisect.bisect_right(values, v) / len(values))
        text = f"{name} {format_latency(v, unit)}"
        # below-right and above-left of a rising curve are clear of it; then further away
        right = [(x + 5, y + 4 + 12 * j, "start") for j in (0, 1, 2, 3)] + [(x + 5, y - 8 - 12 * j, "start")
                                                                            for j in (0, 1)]
        left = [(x - 5, y - 3 - 12 * j, "end") for j in (0, 1, 2, 3)] + [(x - 5, y + 9 + 12 * j, "end")
                                                                         for j in (0, 1)]
        spots = [spot for pair in zip(right, left) for spot in (pair if k % 2 == 0 else pair[::-1])]
        tx, ty, anchor = placer.place(spots, text, 9.5)
        placer.block(x, y, 3)
        lead = ""  # a label moved away from its tick gets a thin line back to it
        if abs(ty - 3 - y) > 9:
            lead = f'<path d="M{num(x)} {num(y)}L{num(tx)} {num(ty - 3)}" stroke="{colour}" stroke-width="0.8"/>'
        out.append(f'<g class="ch-mark"><path d="M{num(x)} {num(y - 6)}v12" stroke="{colour}" stroke-width="2"/>'
                   f'{lead}<text class="ch-mark-label" x="{num(tx)}" y="{num(ty)}" text-anchor="{anchor}" '
                   f'font-size="9.5">{esc(text)}</text></g>')
    return out


def latency_distribution(series: list[DistributionSeries], metric_title: str, title: str) -> Markup:
    """An empirical CDF per run on one shared axis (ms, or s when values pass 10 s), with each
    run's percentiles from `marks` ticked on its curve and labelled exactly."""
    drawn = [(k, s, sorted(float(v) for v in s.values if finite(v))) for k, s in enumerate(series)]
    drawn = [(k, s, vals) for k, s, vals in drawn if vals]
    if not drawn:
        return Markup(no_data(title))
    everything = [v for _, s, vals in drawn for v in (*vals, *(m for m in s.marks.values() if finite(m)))]
    unit = "s" if max(everything) > 10 else "ms"
    factor = 1000.0 if unit == "ms" else 1.0
    rows = legend_rows([LegendEntry(s.run, PALETTE[k % len(PALETTE)], DASHES[k % len(DASHES)])
                        for k, s, _ in drawn] if len(drawn) > 1 else [])
    fr = frame(len(rows))
    sx, xticks = axis_scale(with_zero([v * factor for v in everything]), fr.left, fr.right)
    sy = Scale(0.0, 1.0, fr.bottom, fr.top)
    desc = [f"{s.run}: {len(vals)} values" + "".join(f", {n} {format_latency(m, unit)}" for n, m in s.marks.items()
                                                       if finite(m)) for _, s, vals in drawn[:MAX_DESC]]
    label = f"{title}. Share of requests at or below each {metric_title}, {len(drawn)} " \
            f"{'run' if len(drawn) == 1 else 'runs'}."
    out = open_svg(title, label, "; ".join(desc), fr.height)
    out += axes(fr, sx, sy, xticks, nice_ticks(0.0, 1.0), f"{metric_title} ({unit})", "share of requests")
    out += legend(rows)
    placer = Placer((fr.left + 2, fr.top + 2, fr.right - 2, fr.bottom - 2))
    for k, s, vals in drawn:
        colour, dash = PALETTE[k % len(PALETTE)], DASHES[k % len(DASHES)]
        d = [f"M{num(fr.left)} {num(fr.bottom)}"]
        d += [f"H{num(sx(v * factor))}V{num(sy(f))}" for v, f in _steps(vals)]
        d.append(f"H{num(fr.right)}")
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<g class="ch-cdf"><title>{esc(s.run)}</title><path d="{"".join(d)}" fill="none" '
                   f'stroke="{colour}" stroke-width="1.6"{dash_attr}/>')
        out += _cdf_marks(k, s, vals, unit, sx, sy, placer)
        out.append("</g>")
    out.append("</svg>")
    return Markup("".join(out))
