"""SVG primitives for the report's inline charts (plain strings joined into one `<svg>`). Data text goes
through `esc` (run names are untrusted), coordinates through `num`, which refuses "nan" and "inf"; no ids,
fonts, links or scripts: the page is self-contained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TypeGuard

from markupsafe import escape

WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, BOTTOM = 64, 20, 46  # margins around the plot: tick labels and axis titles live there
LEGEND_ROW = 16
# Okabe-Ito: distinguishable with the common colour-vision deficiencies, all readable on white
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000")
# the second cue for greyscale prints: dash pattern per series, marker shape per series
DASHES = ("", "6 3", "2 3", "8 3 2 3", "4 2 1 2", "1 2")
SHAPES = ("circle", "square", "triangle", "diamond", "down")
INK, MUTED, GRID = "#222222", "#666666", "#e6e6e6"
LIMIT = 1e12  # larger magnitudes are treated as unplottable rather than overflowing the scale arithmetic


def esc(text: object) -> str:
    return str(escape(str(text)))


def num(v: float) -> str:
    """A coordinate, one decimal; a non-finite one is a bug upstream, so it raises instead of drawing NaN."""
    if not math.isfinite(v):
        raise ValueError(f"non-finite coordinate {v!r}")
    s = f"{v:.1f}"
    return "0.0" if s == "-0.0" else s


def finite(v: object) -> TypeGuard[float]:
    """A plottable number: real, finite and within LIMIT (None, bools, NaN and inf are skipped)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < LIMIT


def _decimals(step: float) -> int:
    return max(0, -math.floor(math.log10(step) + 1e-9))


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` evenly spaced 1-2-5 ticks that cover [low, high] (first <= low, last >= high),
    so an axis can start and end on a tick. A zero-width range (a single value) is widened around it."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    low, high = min(low, high), max(low, high)
    if high - low <= max(abs(low), abs(high)) * 1e-9 or high - low < 1e-300:
        pad = abs(low) * 0.1 if abs(low) > 1e-300 else 1.0
        low, high = low - pad, high + pad
    span = high - low
    if not math.isfinite(span):
        return []
    raw = span / max(1, count)
    mag = 10.0 ** math.floor(math.log10(raw))
    norm = raw / mag
    step = mag * (1 if norm <= 1 else 2 if norm <= 2 else 5 if norm <= 5 else 10)
    if not math.isfinite(step + (abs(low) + abs(high)) * 2):  # the outer ticks would overflow
        return []
    d = _decimals(step)
    first, last = math.floor(low / step), math.ceil(high / step)
    if round((first + 1) * step, d) <= low:  # low is a multiple the division missed by a rounding error
        first += 1
    if round((last - 1) * step, d) >= high:
        last -= 1
    return [round(k * step, d) + 0.0 for k in range(first, last + 1)]


def log_ticks(low: float, high: float) -> list[float]:
    """Ticks inside [low, high] for a log axis: 1-2-5 x 10^k, every digit when that gives too few,
    powers of ten (thinned to about 8) when it gives too many. Non-positive values have no log
    position and are dropped; a range with no such tick inside gets linear 1-2-5 ticks inside it."""
    if not (math.isfinite(low) and math.isfinite(high)) or max(low, high) < 1e-300:
        return []
    low, high = min(low, high), max(low, high)
    low = max(low, high * 1e-15)
    if high / low < 1 + 1e-9:
        return [low]
    e0, e1 = math.floor(math.log10(low)), math.ceil(math.log10(high))

    def within(mults: tuple[int, ...]) -> list[float]:
        vals = (float(f"{m}e{e}") for e in range(e0, e1 + 1) for m in mults)
        return [v for v in vals if low * (1 - 1e-9) <= v <= high * (1 + 1e-9) and math.isfinite(v)]

    ticks = within((1, 2, 5))
    if len(ticks) < 3:
        ticks = within(tuple(range(1, 10)))
    if len(ticks) > 10:
        powers = within((1,))
        every = math.ceil(len(powers) / 8)
        ticks = [p for p in powers if round(math.log10(p)) % every == 0] if every > 1 else powers
    if len(ticks) < 2:
        ticks = [t for t in nice_ticks(low, high) if low <= t <= high and t > 0]
    return ticks


def tick_labels(ticks: list[float], log: bool = False) -> list[str]:
    """Tick texts with as many decimals as the step needs (a typographic minus for negatives)."""
    step = min((b - a for a, b in zip(ticks, ticks[1:])), default=0.0)
    if log or step <= 0:
        texts = [f"{t:g}" for t in ticks]
    elif (d := _decimals(step)) <= 6 and max(abs(t) for t in ticks) < 1e9:
        texts = [f"{t:.{d}f}" for t in ticks]
    else:  # very small steps or very large values: as many significant digits as the step needs
        digits = min(17, max(1, math.floor(math.log10(max(abs(t) for t in ticks))) + d + 1))
        texts = [f"{t:.{digits}g}" for t in ticks]
    return [_minus(t) for t in texts]


def _minus(text: str) -> str:
    """A typographic minus; "-0.0" (a rounded tiny negative) reads as plain 0."""
    if not text.startswith("-"):
        return text
    return "\u2212" + text[1:] if text.strip("-0.") else text[1:]


@dataclass(frozen=True)
class Scale:
    """Data -> pixels along one axis; `start`/`end` are the pixels of `lo`/`hi` (y runs upwards)."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def __call__(self, v: float) -> float:
        if self.log:
            t = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            t = (v - self.lo) / (self.hi - self.lo)
        return self.start + t * (self.end - self.start)


def axis_scale(values: list[float], start: float, end: float, allow_log: bool = False) -> tuple[Scale, list[float]]:
    """A scale over `values` and its ticks: log (padded, ticks inside) when `allow_log` and the
    positive values span more than a factor of 4, else linear on a domain that ends on nice ticks."""
    vals = [v for v in values if finite(v)] or [0.0]
    lo, hi = min(vals), max(vals)
    if allow_log and lo > 1e-150 and hi / lo > 4:  # (a subnormal low end would pad to 0 on a log axis)
        pad = (hi / lo) ** 0.04
        lo, hi = lo / pad, hi * pad
        return Scale(lo, hi, start, end, log=True), log_ticks(lo, hi)
    ticks = nice_ticks(lo, hi)
    return Scale(ticks[0], ticks[-1], start, end), ticks


def with_zero(values: list[float]) -> list[float]:
    """Adds 0 to an axis of non-negative amounts when that costs at most half the axis."""
    vals = [v for v in values if finite(v)]
    if vals and min(vals) >= 0 and min(vals) <= max(vals) / 2:
        return [*vals, 0.0]
    return vals


@dataclass(frozen=True)
class Frame:
    """The plot rectangle inside the SVG, and the SVG's own height (a long legend makes it taller)."""

    left: float
    top: float
    right: float
    bottom: float
    height: float


def frame(legend_rows: int) -> Frame:
    top = 40 + LEGEND_ROW * legend_rows
    height = HEIGHT + LEGEND_ROW * max(0, legend_rows - 1)
    return Frame(LEFT, top, WIDTH - RIGHT, height - BOTTOM, height)


def text_width(text: str, size: float) -> float:
    """A sans-serif text's width, estimated (there is no layout engine here): 0.6 em per character."""
    return 0.6 * size * len(text)


def open_svg(title: str, label: str, desc: str, height: float) -> list[str]:
    """The root element with its accessible name and description, a white background and the title."""
    return [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0f}" width="100%" '
            f'style="max-width:{WIDTH}px;height:auto" role="img" aria-label="{esc(label)}" '
            f'font-family="sans-serif" font-size="11" fill="{INK}">',
            f"<title>{esc(title)}</title><desc>{esc(desc)}</desc>",
            f'<rect x="0" y="0" width="{WIDTH}" height="{height:.0f}" fill="#ffffff"/>',
            f'<text x="{LEFT}" y="20" font-size="13" font-weight="bold">{esc(title)}</text>']


def no_data(title: str, why: str = "no data") -> str:
    """The chart that stands in for one with nothing to draw: it says so instead of raising."""
    parts = open_svg(title, f"{title}: {why}", why, HEIGHT)
    parts.append(f'<text class="ch-empty" x="{WIDTH / 2:.0f}" y="{HEIGHT / 2:.0f}" text-anchor="middle" '
                 f'fill="{MUTED}" font-size="14">{esc(why)}</text></svg>')
    return "".join(parts)


def axes(fr: Frame, sx: Scale, sy: Scale, xticks: list[float], yticks: list[float], x_title: str,
         y_title: str) -> list[str]:
    out = ['<g class="ch-axes">']
    for t, text in zip(xticks, tick_labels(xticks, sx.log)):
        x = num(sx(t))
        out.append(f'<path d="M{x} {num(fr.top)}V{num(fr.bottom)}" stroke="{GRID}"/>'
                   f'<path d="M{x} {num(fr.bottom)}v4" stroke="{MUTED}"/>'
                   f'<text class="ch-tick" x="{x}" y="{num(fr.bottom + 15)}" text-anchor="middle">{esc(text)}</text>')
    for t, text in zip(yticks, tick_labels(yticks, sy.log)):
        y = num(sy(t))
        out.append(f'<path d="M{num(fr.left)} {y}H{num(fr.right)}" stroke="{GRID}"/>'
                   f'<path d="M{num(fr.left)} {y}h-4" stroke="{MUTED}"/>'
                   f'<text class="ch-tick" x="{num(fr.left - 6)}" y="{y}" dy="0.35em" '
                   f'text-anchor="end">{esc(text)}</text>')
    mid_x, mid_y = (fr.left + fr.right) / 2, (fr.top + fr.bottom) / 2
    out.append(f'<path d="M{num(fr.left)} {num(fr.top)}V{num(fr.bottom)}H{num(fr.right)}" fill="none" '
               f'stroke="{MUTED}"/>'
               f'<text class="ch-axis-title" x="{num(mid_x)}" y="{num(fr.bottom + 34)}" '
               f'text-anchor="middle">{esc(x_title)}</text>'
               f'<text class="ch-axis-title" x="16" y="{num(mid_y)}" text-anchor="middle" '
               f'transform="rotate(-90 16 {num(mid_y)})">{esc(y_title)}</text></g>')
    return out


def marker(shape: str, x: float, y: float, colour: str, hollow: bool = False, r: float = 4.0,
           cls: str = "ch-marker") -> str:
    """One marker; hollow ones are white inside (points that miss a target)."""
    fill = "#ffffff" if hollow else colour
    cls = f"{cls} ch-hollow" if hollow else cls
    paint = f'class="{cls}" fill="{fill}" stroke="{colour}" stroke-width="1.5"'
    if shape == "circle":
        return f'<circle {paint} cx="{num(x)}" cy="{num(y)}" r="{num(r)}"/>'
    if shape == "square":
        s = r * 0.9
        return f'<rect {paint} x="{num(x - s)}" y="{num(y - s)}" width="{num(2 * s)}" height="{num(2 * s)}"/>'
    if shape == "cross":
        return (f'<path class="{cls}" fill="none" stroke="{colour}" stroke-width="2" d="M{num(x - r)} {num(y - r)}'
                f'L{num(x + r)} {num(y + r)}M{num(x - r)} {num(y + r)}L{num(x + r)} {num(y - r)}"/>')
    k = 1.25 * r
    corners = {"triangle": [(0, -k), (k, 0.8 * k), (-k, 0.8 * k)], "down": [(0, k), (k, -0.8 * k), (-k, -0.8 * k)],
               "diamond": [(0, -k), (k, 0), (0, k), (-k, 0)]}[shape]
    d = "L".join(f"{num(x + dx)} {num(y + dy)}" for dx, dy in corners)
    return f'<path {paint} d="M{d}Z"/>'


@dataclass(frozen=True)
class LegendEntry:
    """One legend item: a line (colour, dash), a marker, or a filled swatch, then its text."""

    text: str
    colour: str
    dash: str | None = None  # None: no line sample
    shape: str | None = None
    hollow: bool = False
    swatch: str | None = None  # a fill colour: an area sample instead of a line


def legend_rows(entries: list[LegendEntry]) -> list[list[tuple[float, LegendEntry]]]:
    """Entries flowed left to right into rows that fit the width: (x offset, entry) per row."""
    rows: list[list[tuple[float, LegendEntry]]] = [[]] if entries else []
    x = float(LEFT)
    for e in entries:
        w = 26 + text_width(e.text, 10) + 14
        if rows[-1] and x + w > WIDTH - RIGHT:
            rows.append([])
            x = float(LEFT)
        rows[-1].append((x, e))
        x += w
    return rows


def legend(rows: list[list[tuple[float, LegendEntry]]]) -> list[str]:
    out = ['<g class="ch-legend" font-size="10">'] if rows else []
    for i, row in enumerate(rows):
        y = 36 + LEGEND_ROW * i
        for x, e in row:
            out.append('<g class="ch-legend-item">')
            if e.swatch:
                out.append(f'<rect x="{num(x)}" y="{num(y - 5)}" width="20" height="10" fill="{e.swatch}" '
                           f'stroke="{e.colour}"/>')
            if e.dash is not None:
                dash = f' stroke-dasharray="{e.dash}"' if e.dash else ""
                out.append(f'<path d="M{num(x)} {num(y)}h20" stroke="{e.colour}" stroke-width="1.8"{dash}/>')
            if e.shape:
                out.append(marker(e.shape, x + 10, y, e.colour, e.hollow, 3.5, "ch-legend-marker"))
            out.append(f'<text x="{num(x + 26)}" y="{num(y)}" dy="0.35em">{esc(e.text)}</text></g>')
    if rows:
        out.append("</g>")
    return out


Box = tuple[float, float, float, float]


@dataclass
class Placer:
    """Greedy label placement: each label takes the first offered spot inside `bounds` that
    overlaps nothing placed so far (markers count), else the first spot inside (never off the chart)."""

    bounds: Box
    boxes: list[Box] = field(default_factory=list)

    def block(self, x: float, y: float, r: float) -> None:
        self.boxes.append((x - r, y - r, x + r, y + r))

    def place(self, spots: list[tuple[float, float, str]], text: str, size: float) -> tuple[float, float, str]:
        """`spots`: (x, baseline y, text-anchor) candidates in order of preference."""
        w, h = text_width(text, size), size
        chosen = None
        for x, y, anchor in spots:
            box = _box(x, y, anchor, w, h)
            inside = (box[0] >= self.bounds[0] and box[2] <= self.bounds[2] and box[1] >= self.bounds[1]
                      and box[3] <= self.bounds[3])
            if inside and not any(_overlap(box, b) for b in self.boxes):
                chosen = (x, y, anchor, box)
                break
            if inside and chosen is None:
                chosen = (x, y, anchor, box)
        if chosen is None:  # nowhere inside: the first spot, moved inside as far as the text allows
            x, y, _ = spots[0]
            x = min(max(x, self.bounds[0]), max(self.bounds[0], self.bounds[2] - w))
            y = min(max(y, self.bounds[1] + 0.8 * h), self.bounds[3] - 0.25 * h)
            chosen = (x, y, "start", _box(x, y, "start", w, h))
        self.boxes.append(chosen[3])
        return chosen[0], chosen[1], chosen[2]


def _box(x: float, y: float, anchor: str, w: float, h: float) -> Box:
    x0 = x - w if anchor == "end" else x - w / 2 if anchor == "middle" else x
    return (x0, y - 0.8 * h, x0 + w, y + 0.25 * h)


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def around(x: float, y: float, gap: float = 6.0) -> list[tuple[float, float, str]]:
    """Label spots around a point, right first (reading order), then left, above, below."""
    return [(x + gap, y - gap, "start"), (x + gap, y + gap + 8, "start"), (x - gap, y - gap, "end"),
            (x - gap, y + gap + 8, "end"), (x, y - gap - 4, "middle"), (x, y + gap + 12, "middle")]
