"""Accuracy heatmaps, context length x depth, with colour-blind-safe fills, and the mean KL per cell
beside them (docs/html-report.md, 'Drift in the page'). Columns are the exact context lengths when a pack
has at most 12, else evals.compare's buckets (the speed-by-length table's edges); `pack_layout` is the
one place a context length becomes a column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from evalrun.contract.types import CORRECT_OUTCOMES
from evalrun.evals.compare import candidate_outcome, length_bucket
from evalrun.evals.drift import Drift, Figure
from evalrun.evals.scoring import ScoredItem
from evalrun.reports.view.model import HeatCell, Heatmap, HeatmapSet, KLMap

# cividis (colour-blind-safe, perceptually uniform), 11 stops from 0 to 1
_CIVIDIS = ["#00224e", "#123570", "#3b496c", "#575d6d", "#707173", "#8a8779", "#a59c74", "#c3b369", "#e1cc55",
            "#fee838", "#fee838"]
# blue (gain) - light grey - orange (loss), colour-blind-safe diverging; index 0 = -1 (loss), 8 = +1 (gain)
_DIVERGING = ["#b35806", "#e08214", "#fdb863", "#fee0b6", "#f2f2f2", "#c6dbef", "#6baed6", "#2171b5", "#08306b"]
DIFF_SATURATION_POINTS = 25.0
# KL per token, light to dark on a log scale from KL_LOW (at or below: the lightest) to KL_HIGH (at or
# above: the darkest); ColorBrewer OrRd, sequential: read by lightness, no hues to tell apart. The KL
# heatmaps and the browser's per-token strip (BrowserData.kl_scale) share it.
KL_STOPS = ["#fff7ec", "#fee8c8", "#fdd49e", "#fdbb84", "#fc8d59", "#ef6548", "#d7301f", "#b30000", "#7f0000"]
KL_LOW, KL_HIGH = 1e-4, 1.0


def _hex(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


def _lerp(stops: list[str], t: float) -> str:
    t = min(max(t, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(t), len(stops) - 2)
    f = t - i
    a, b = _hex(stops[i]), _hex(stops[i + 1])
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))


def ink(fill: str) -> str:
    """Black or white, whichever reads on `fill`."""
    r, g, b = (v / 255 for v in _hex(fill))
    lum = 0.2126 * r ** 2.2 + 0.7152 * g ** 2.2 + 0.0722 * b ** 2.2
    return "#000000" if lum > 0.2 else "#ffffff"


def accuracy_fill(acc: float) -> str:
    return _lerp(_CIVIDIS[:-1], acc)


def difference_fill(points: float) -> str:
    return _lerp(_DIVERGING, 0.5 + points / (2 * DIFF_SATURATION_POINTS))


def kl_fill(kl: float) -> str:
    if not kl > KL_LOW:
        return KL_STOPS[0]
    return _lerp(KL_STOPS, math.log10(kl / KL_LOW) / math.log10(KL_HIGH / KL_LOW))


def item_length(item: ScoredItem) -> int | None:
    """The item's context length: the length its pack aimed for, else the one it measured."""
    meta = item.meta
    length = meta.get("target_tokens")
    if not isinstance(length, int):
        length = meta.get("context_tokens") if isinstance(meta.get("context_tokens"), int) else None
    return length


def _slices(item: ScoredItem, name: str) -> tuple[int | None, float | None]:
    """(context length, depth) of one gold field, from the item's metadata."""
    meta = item.meta
    length = item_length(item)
    depth = meta.get("depth", meta.get("field_depth"))
    fields_meta = meta.get("fields")
    if not isinstance(depth, (int, float)) and isinstance(fields_meta, dict):
        depth = (fields_meta.get(name) or {}).get("depth")
    return length, (float(depth) if isinstance(depth, (int, float)) else None)


def _length_label(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


Grid = dict[tuple[str, str], list[int]]  # (row, column) -> [fields, baseline correct, candidate correct]


def _cells(grid: Grid, rows: list[str], cols: list[str],
           cell: Callable[[str, str, list[int]], HeatCell]) -> list[list[HeatCell | None]]:
    return [[cell(r, col, grid[(r, col)]) if grid.get((r, col)) else None for col in cols] for r in rows]


def _accuracy_map(kind: str, run: str, idx: int, grid: Grid, row_labels: list[str], col_labels: list[str]) -> Heatmap:
    """One run's accuracy per cell (`idx` 1: the baseline's count, 2: the candidate's)."""
    def cell(r: str, col: str, g: list[int]) -> HeatCell:
        acc = g[idx] / g[0]
        fill = accuracy_fill(acc)
        return HeatCell(n=g[0], value=acc, label=f"{100 * acc:.0f}", fill=fill, ink=ink(fill),
                        tooltip=f"{run}: length {col}, depth {r}: {g[idx]}/{g[0]} correct ({100 * acc:.1f}%)")

    rows = _cells(grid, row_labels, col_labels, cell)
    legend = [(f"{p}%", accuracy_fill(p / 100)) for p in (0, 25, 50, 75, 100)]
    return Heatmap(title=f"{run}: accuracy %", kind=kind, rows=row_labels, cols=col_labels, cells=rows,
                   legend=legend)


@dataclass
class Layout:
    """Rows (depth) and columns (context length) of a pack's heatmaps, and the cell each field falls in:
    the accuracy maps and the KL map beside them share it."""

    rows: list[str]
    cols: list[str]
    row_of: Callable[[float], str]
    col_of: Callable[[int], str]

    def cell(self, length: int, depth: float) -> tuple[str, str]:
        return self.row_of(depth), self.col_of(length)


def field_slices(pack: str, base: list[ScoredItem]) -> list[tuple[ScoredItem, str, int, float]]:
    """(item, field, context length, depth) of every gold field of `pack` whose item records both."""
    out = []
    for b in base:
        if b.pack != pack:
            continue
        for name in b.fields:
            if b.golds.get(name) is None:
                continue
            length, depth = _slices(b, name)
            if length is not None and depth is not None:
                out.append((b, name, length, depth))
    return out


def layout(lengths: set[int], depths: set[float]) -> Layout:
    """Exact lengths when a pack has at most 12, else the length buckets; depths as they are, or five bins."""
    lens, deps = sorted(lengths), sorted(depths)
    exact_len = len(lens) <= 12
    len_key: Callable[[int], str] = _length_label if exact_len else length_bucket
    cols = list(dict.fromkeys(len_key(n) for n in lens))
    if len(deps) <= 11:
        dep_key = lambda d: f"{d:.2f}"  # noqa: E731
        rows = [f"{d:.2f}" for d in deps]
    else:  # continuous depths (field positions): five bins
        edges = [0.2, 0.4, 0.6, 0.8, 1.01]
        names = ["0.0–0.2", "0.2–0.4", "0.4–0.6", "0.6–0.8", "0.8–1.0"]
        dep_key = lambda d: names[next(i for i, e in enumerate(edges) if d < e)]  # noqa: E731
        rows = [n for n in names if any(dep_key(d) == n for d in deps)]
    return Layout(rows, cols, dep_key, len_key)


def paired_slices(pack: str, base: list[ScoredItem],
                  cand: list[ScoredItem]) -> list[tuple[ScoredItem, str, int, float, ScoredItem]]:
    """`field_slices` of the items the candidate answered too, each with the candidate's item."""
    cand_by_id = {s.item_id: s for s in cand}
    return [(b, name, length, depth, cand_by_id[b.item_id]) for b, name, length, depth in field_slices(pack, base)
            if b.item_id in cand_by_id]


def pack_layout(pack: str, base: list[ScoredItem], cand: list[ScoredItem]) -> Layout | None:
    """The layout of `pack`'s heatmaps for this pairing; None when its fields vary in neither length nor
    depth (no heatmap)."""
    slices = paired_slices(pack, base, cand)
    lengths, depths = {x[2] for x in slices}, {x[3] for x in slices}
    if len(slices) < 2 or (len(lengths) < 2 and len(depths) < 2):
        return None
    return layout(lengths, depths)


def heatmaps(pack: str, base: list[ScoredItem], cand: list[ScoredItem], cand_name: str,
              base_name: str) -> HeatmapSet | None:
    """Field accuracy by context length x depth, for fields whose items carry both (needles, document fields)."""
    lay = pack_layout(pack, base, cand)
    if lay is None:
        return None
    row_labels, col_labels = lay.rows, lay.cols
    cells = [(length, depth, b.fields[name].outcome in CORRECT_OUTCOMES, candidate_outcome(c, name) in CORRECT_OUTCOMES)
             for b, name, length, depth, c in paired_slices(pack, base, cand)]
    grid: Grid = {}
    for length, depth, b_ok, c_ok in cells:
        g = grid.setdefault(lay.cell(length, depth), [0, 0, 0])
        g[0] += 1
        g[1] += b_ok
        g[2] += c_ok

    def diff_cell(r: str, col: str, counts: list[int]) -> HeatCell:
        d = 100.0 * (counts[2] - counts[1]) / counts[0]
        fill = difference_fill(d)
        return HeatCell(n=counts[0], value=d, label=f"{d:+.0f}" if round(d) else "0", fill=fill, ink=ink(fill),
                        tooltip=f"{cand_name} − {base_name}: length {col}, depth {r}: {d:+.1f} points "
                                f"({counts[2]}/{counts[0]} vs {counts[1]}/{counts[0]} correct)")

    diff_rows = _cells(grid, row_labels, col_labels, diff_cell)
    s = DIFF_SATURATION_POINTS
    legend = [(f"{p:+.0f}" if p else "0", difference_fill(p)) for p in (-s, -s / 2, 0, s / 2, s)]
    diff = Heatmap(title=f"{cand_name} − {base_name}: points (orange: loss, blue: gain)", kind="difference",
                   rows=row_labels, cols=col_labels, cells=diff_rows, legend=legend)
    return HeatmapSet(pack=pack, unit="gold fields per cell; rows: depth of the value in the document, columns: "
                                       "context length in tokens",
                      baseline=_accuracy_map("baseline", base_name, 1, grid, row_labels, col_labels),
                      candidate=_accuracy_map("candidate", cand_name, 2, grid, row_labels, col_labels),
                      difference=diff)


NO_RECORD = "–"
_EMPTY = "#ffffff"


def kl_label(x: float) -> str:
    return f"{x:.2g}"


def _cell(drift: Drift, where: str, item_ids: set[str], floor: Figure | None) -> HeatCell:
    kls = [float(drift.per_item[i].kl.mean()) for i in sorted(item_ids) if i in drift.per_item
           and drift.per_item[i].kl.size]
    if not kls:
        return HeatCell(n=0, value=None, label=NO_RECORD, fill=_EMPTY, ink="#000000",
                        tooltip=f"{drift.candidate}: {where}: no drift record for its {len(item_ids)} item(s)")
    mean = sum(kls) / len(kls)
    fill = kl_fill(mean)
    marked = floor is not None and mean <= floor.high
    note = f"; at or under the A/A floor ({kl_label(floor.high)})" if marked and floor is not None else ""
    return HeatCell(n=len(kls), value=mean, label=kl_label(mean), fill=fill, ink=ink(fill), marked=marked,
                    tooltip=f"{drift.candidate}: {where}: mean KL {mean:.3g} over {len(kls)} item(s){note}")


def _legend(floor: Figure | None) -> list[tuple[str, str]]:
    legend = [(f"≤{KL_LOW:g}", kl_fill(0.0)), ("1e-3", kl_fill(1e-3)), ("0.01", kl_fill(1e-2)), ("0.1", kl_fill(0.1)),
              (f"≥{KL_HIGH:g}", kl_fill(KL_HIGH))]
    if floor is not None:
        legend.append((f"outlined: ≤ A/A floor {kl_label(floor.high)}", _EMPTY))
    return legend


def _floor(drift: Drift, pack: str) -> Figure | None:
    return drift.floor_of(pack) or drift.floor_of("all")


def kl_heatmap(pack: str, base: list[ScoredItem], cand: list[ScoredItem], drift: Drift) -> Heatmap | None:
    """The mean KL in each cell of `pack`'s accuracy heatmaps; None when the pack has none."""
    lay = pack_layout(pack, base, cand)
    if lay is None:
        return None
    items: dict[tuple[str, str], set[str]] = {}
    for b, _name, length, depth, _c in paired_slices(pack, base, cand):
        items.setdefault(lay.cell(length, depth), set()).add(b.item_id)
    floor = _floor(drift, pack)
    cells: list[list[HeatCell | None]] = [
        [_cell(drift, f"length {col}, depth {r}", items[(r, col)], floor) if (r, col) in items else None
         for col in lay.cols] for r in lay.rows]
    return Heatmap(title=f"{drift.candidate}: mean KL per token", kind="kl", rows=lay.rows, cols=lay.cols,
                   cells=cells, legend=_legend(floor))


def length_kl_map(pack: str, base: list[ScoredItem], cand: list[ScoredItem], drift: Drift) -> KLMap | None:
    """Mean KL by context-length bucket, one row, for a pack without accuracy heatmaps spanning 2+ buckets."""
    answered = {s.item_id for s in cand}
    by_bucket: dict[tuple[int, str], set[str]] = {}
    for b in base:
        length = item_length(b)
        if b.pack == pack and b.item_id in answered and length is not None:
            by_bucket.setdefault((length, length_bucket(length)), set()).add(b.item_id)
    cols = list(dict.fromkeys(label for _n, label in sorted(by_bucket)))
    if len(cols) < 2:
        return None
    items: dict[str, set[str]] = {}
    for (_n, label), ids in by_bucket.items():
        items.setdefault(label, set()).update(ids)
    floor = _floor(drift, pack)
    row = "all items"
    cells: list[list[HeatCell | None]] = [[_cell(drift, f"length {col}", items[col], floor) for col in cols]]
    heat = Heatmap(title=f"{drift.candidate}: mean KL per token", kind="kl", rows=[row], cols=cols, cells=cells,
                   legend=_legend(floor))
    return KLMap(pack=pack, unit="items per cell; columns: context length in tokens (buckets)", heatmap=heat)


__all__ = ["NO_RECORD", "kl_heatmap", "kl_label", "length_kl_map"]
