"""Accuracy heatmaps, context length x depth, with colour-blind-safe fills.

Columns are the exact context lengths when a pack has a few (at most 12),
else the buckets of evals.compare: the same edges as the speed-by-length table.
"""

from __future__ import annotations

from evalrun.contract.types import CORRECT_OUTCOMES
from evalrun.evals.compare import candidate_outcome, length_bucket
from evalrun.evals.scoring import ScoredItem
from evalrun.reports.view.model import HeatCell, Heatmap, HeatmapSet

# cividis (colour-blind-safe, perceptually uniform), 11 stops from 0 to 1
_CIVIDIS = ["#00224e", "#123570", "#3b496c", "#575d6d", "#707173", "#8a8779", "#a59c74", "#c3b369", "#e1cc55",
            "#fee838", "#fee838"]
# blue (gain) - light grey - orange (loss), colour-blind-safe diverging; index 0 = -1 (loss), 8 = +1 (gain)
_DIVERGING = ["#b35806", "#e08214", "#fdb863", "#fee0b6", "#f2f2f2", "#c6dbef", "#6baed6", "#2171b5", "#08306b"]
DIFF_SATURATION_POINTS = 25.0


def _hex(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


def _lerp(stops: list[str], t: float) -> str:
    t = min(max(t, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(t), len(stops) - 2)
    f = t - i
    a, b = _hex(stops[i]), _hex(stops[i + 1])
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))


def _ink(fill: str) -> str:
    r, g, b = (v / 255 for v in _hex(fill))
    lum = 0.2126 * r ** 2.2 + 0.7152 * g ** 2.2 + 0.0722 * b ** 2.2
    return "#000000" if lum > 0.2 else "#ffffff"


def accuracy_fill(acc: float) -> str:
    return _lerp(_CIVIDIS[:-1], acc)


def difference_fill(points: float) -> str:
    return _lerp(_DIVERGING, 0.5 + points / (2 * DIFF_SATURATION_POINTS))


def _slices(item: ScoredItem, name: str) -> tuple[int | None, float | None]:
    """(context length, depth) of one gold field, from the item's metadata."""
    meta = item.meta
    length = meta.get("target_tokens")
    if not isinstance(length, int):
        length = meta.get("context_tokens") if isinstance(meta.get("context_tokens"), int) else None
    depth = meta.get("depth", meta.get("field_depth"))
    fields_meta = meta.get("fields")
    if not isinstance(depth, (int, float)) and isinstance(fields_meta, dict):
        depth = (fields_meta.get(name) or {}).get("depth")
    return length, (float(depth) if isinstance(depth, (int, float)) else None)


def _length_label(n: int, exact: bool) -> str:
    if not exact:
        return length_bucket(n)
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def _accuracy_map(kind: str, run: str, idx: int, grid: dict[tuple[str, str], list[int]], row_labels: list[str],
                  col_labels: list[str]) -> Heatmap:
    """One run's accuracy per cell (`idx` 1: the baseline's count, 2: the candidate's)."""
    rows: list[list[HeatCell | None]] = []
    for r in row_labels:
        row: list[HeatCell | None] = []
        for col in col_labels:
            g = grid.get((r, col))
            if not g:
                row.append(None)
                continue
            acc = g[idx] / g[0]
            fill = accuracy_fill(acc)
            row.append(HeatCell(n=g[0], value=acc, label=f"{100 * acc:.0f}",
                                tooltip=f"{run}: length {col}, depth {r}: {g[idx]}/{g[0]} correct ({100 * acc:.1f}%)",
                                fill=fill, ink=_ink(fill)))
        rows.append(row)
    legend = [(f"{p}%", accuracy_fill(p / 100)) for p in (0, 25, 50, 75, 100)]
    return Heatmap(title=f"{run}: accuracy %", kind=kind, rows=row_labels, cols=col_labels, cells=rows,
                   legend=legend)


def heatmaps(pack: str, base: list[ScoredItem], cand: list[ScoredItem], cand_name: str,
              base_name: str) -> HeatmapSet | None:
    """Field accuracy by context length x depth, for fields whose items carry both (needles, document fields)."""
    cand_by_id = {s.item_id: s for s in cand}
    cells: list[tuple[int, float, bool, bool]] = []
    for b in base:
        c = cand_by_id.get(b.item_id)
        if b.pack != pack or c is None:
            continue
        for name, bscore in b.fields.items():
            if b.golds.get(name) is None:
                continue
            length, depth = _slices(b, name)
            if length is None or depth is None:
                continue
            c_out = candidate_outcome(c, name)
            cells.append((length, depth, bscore.outcome in CORRECT_OUTCOMES, c_out in CORRECT_OUTCOMES))
    lengths = sorted({x[0] for x in cells})
    depths = sorted({x[1] for x in cells})
    if len(cells) < 2 or (len(lengths) < 2 and len(depths) < 2):
        return None
    exact_len = len(lengths) <= 12
    len_key = (lambda n: _length_label(n, True)) if exact_len else (lambda n: length_bucket(n))
    col_labels = list(dict.fromkeys(len_key(n) for n in lengths))
    if len(depths) <= 11:
        dep_key = lambda d: f"{d:.2f}"  # noqa: E731
        row_labels = [f"{d:.2f}" for d in depths]
    else:  # continuous depths (field positions): five bins
        edges = [0.2, 0.4, 0.6, 0.8, 1.01]
        names = ["0.0–0.2", "0.2–0.4", "0.4–0.6", "0.6–0.8", "0.8–1.0"]
        dep_key = lambda d: names[next(i for i, e in enumerate(edges) if d < e)]  # noqa: E731
        row_labels = [n for n in names if any(dep_key(d) == n for d in depths)]
    grid: dict[tuple[str, str], list[int]] = {}
    for length, depth, b_ok, c_ok in cells:
        g = grid.setdefault((dep_key(depth), len_key(length)), [0, 0, 0])
        g[0] += 1
        g[1] += b_ok
        g[2] += c_ok

    diff_rows: list[list[HeatCell | None]] = []
    for r in row_labels:
        row: list[HeatCell | None] = []
        for col in col_labels:
            counts = grid.get((r, col))
            if not counts:
                row.append(None)
                continue
            d = 100.0 * (counts[2] - counts[1]) / counts[0]
            fill = difference_fill(d)
            row.append(HeatCell(n=counts[0], value=d, label=f"{d:+.0f}" if round(d) else "0",
                                tooltip=f"{cand_name} − {base_name}: length {col}, depth {r}: {d:+.1f} points "
                                        f"({counts[2]}/{counts[0]} vs {counts[1]}/{counts[0]} correct)",
                                fill=fill, ink=_ink(fill)))
        diff_rows.append(row)
    s = DIFF_SATURATION_POINTS
    legend = [(f"{p:+.0f}" if p else "0", difference_fill(p)) for p in (-s, -s / 2, 0, s / 2, s)]
    diff = Heatmap(title=f"{cand_name} − {base_name}: points (orange: loss, blue: gain)", kind="difference",
                   rows=row_labels, cols=col_labels, cells=diff_rows, legend=legend)
    return HeatmapSet(pack=pack, unit="gold fields per cell; rows: depth of the value in the document, columns: "
                                       "context length in tokens",
                      baseline=_accuracy_map("baseline", base_name, 1, grid, row_labels, col_labels),
                      candidate=_accuracy_map("candidate", cand_name, 2, grid, row_labels, col_labels),
                      difference=diff)
