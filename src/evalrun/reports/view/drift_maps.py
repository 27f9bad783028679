"""Drift beside accuracy: a candidate's mean KL per heatmap cell (issue 30, item 3).

A cell's figure is the mean, over the items with a gold field in that cell, of each item's mean
per-token KL: the drift table's mean KL restricted to the cell (an item with fields in two cells counts
in both, once in each). Its count is the items with a drift record; a cell whose items have none shows
"–". Cells, rows and columns are the accuracy heatmaps' own (heatmaps.pack_layout): the one place a
context length becomes a column. A pack without accuracy heatmaps (its items vary in length only) gets
one row by length bucket (evals.compare's buckets), when its items span two or more. Cells at or under
the upper end of the A/A floor's interval (Drift.floor: the pack's, else all packs') are outlined:
batching alone moves the distribution that much.
"""

from __future__ import annotations

from evalrun.evals.compare import length_bucket
from evalrun.evals.drift import Drift, Figure
from evalrun.evals.scoring import ScoredItem
from evalrun.reports.view.heatmaps import KL_HIGH, KL_LOW, ink, item_length, kl_fill, pack_layout, paired_slices
from evalrun.reports.view.model import HeatCell, Heatmap, KLMap

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
