"""Drift in the HTML views without a model: the KL heatmap beside the accuracy heatmaps (cells equal to
means computed by hand, "–" where no item has a record, the A/A floor outlined) and the per-token KL
strip in the item browser's data (escaped model text, the flip note, compact numbers).

The drift is built from small arrays and attached to the synthetic report of tests/conftest.py.
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from evalrun.evals.drift import Drift, Figure, FlipNote, TokenDrift
from evalrun.reports.formats.html import render_html_text
from evalrun.reports.view import build_view
from evalrun.reports.view.heatmaps import KL_STOPS, kl_fill, length_kl_map
from evalrun.reports.view.strip import STRIP_TOKENS, kl_code, kl_value
from tests.conftest import make_report

HOSTILE_TOKEN = "<script>window.pwned=true</script>"
FLIPPED = "needle/L512-D0.00-1"  # a harmful flip of int4kv in the synthetic runs


def _row(kl: list[float], other: tuple[int, ...] = ()) -> TokenDrift:
    n = len(kl)
    same = np.ones(n, bool)
    same[list(other)] = False
    return TokenDrift(kl=np.array(kl), same_top1=same, dp=np.zeros(n), margin=np.full(n, 0.5))


def int4_drift(floor: Figure | None = None) -> Drift:
    """int4kv's drift on some needle items; the cell (depth 0.50, 1k) has no record."""
    per_item = {
        "needle/L512-D0.00-0": _row([0.1, 0.3]),               # item mean 0.2
        FLIPPED: _row([0.0, 0.2, 1.0, 0.4], other=(2,)),         # item mean 0.4; the cell (0.00, 512): 0.3
        "needle/L1024-D0.00-0": _row([0.02]),                  # the only record of (0.00, 1k)
        "needle/L512-D0.50-0": _row([0.004, 0.002]),           # (0.50, 512): 0.003
        "needle/L512-D0.50-1": _row([0.001]),                  # (0.50, 512) mean (0.003 + 0.001) / 2
    }
    tokens = {i: [f"t{k}" for k in range(r.kl.size)] for i, r in per_item.items()}
    tokens[FLIPPED] = ["The", " number", HOSTILE_TOKEN, "\n"]
    note = FlipNote(FLIPPED, "value", 2, 0.52, 0.47, 1.0, True)
    return Drift("int4kv", [], None, flips=[note], per_item=per_item, tokens=tokens, floor=floor or {},
                 floor_run="baseline#2" if floor else None)


def drift_report(floor: Figure | None = None) -> Any:
    report = make_report()
    d = int4_drift(floor)
    if floor is not None:
        d.floor = {"all": floor}
    return with_drift(report, "int4kv", d)


def with_drift(report: Any, name: str, drift: Drift) -> Any:
    """The report with `name`'s drift measured as given."""
    return replace(report, candidates=tuple(replace(c, drift=drift) if c.name == name else c for c in report.candidates))


def _grid(h: Any) -> list[list[Any]]:
    return [[(c.label, c.n) if c else None for c in row] for row in h.cells]


def test_kl_heatmap_cells_are_the_means_by_hand() -> None:
    view = build_view(drift_report())
    [hs] = [h for h in view.sections[0].heatmaps if h.pack == "needle"]
    kl = hs.kl
    assert kl is not None and kl.rows == hs.baseline.rows and kl.cols == hs.baseline.cols  # the same layout
    assert kl.rows == ["0.00", "0.50", "1.00"] and kl.cols == ["512", "1k"]
    values = [[c.value if c else None for c in row] for row in kl.cells]
    assert values[0][0] == pytest.approx((0.2 + 0.4) / 2) and values[0][1] == pytest.approx(0.02)
    assert values[1][0] == pytest.approx((0.003 + 0.001) / 2)
    assert _grid(kl)[0] == [("0.3", 2), ("0.02", 1)]
    # cells with items but no drift record say so, never 0
    assert _grid(kl)[1][1] == ("–", 0) and _grid(kl)[2] == [("–", 0), ("–", 0)]
    assert values[1][1] is None and "no drift record" in kl.cells[1][1].tooltip  # type: ignore[union-attr]
    assert kl.cells[0][0].fill == kl_fill(0.3) and kl_fill(0.0) == KL_STOPS[0] and kl_fill(5.0) == KL_STOPS[-1]  # type: ignore[union-attr]
    assert not any(c.marked for row in kl.cells for c in row if c)  # no A/A floor: nothing outlined
    # the sparse candidate has no drift: no KL map beside its heatmaps
    assert all(h.kl is None for h in view.sections[1].heatmaps)


def test_cells_under_the_aa_floor_are_outlined_and_the_legend_says_so() -> None:
    view = build_view(drift_report(Figure(0.001, 0.0005, 0.005)))
    kl = view.sections[0].heatmaps[0].kl
    assert kl is not None
    marked = [[bool(c and c.marked) for c in row] for row in kl.cells]
    assert marked == [[False, False], [True, False], [False, False]]  # only (0.50, 512): 0.002 <= 0.005
    assert kl.legend[-1][0] == "outlined: ≤ A/A floor 0.005"
    page = render_html_text(view)
    assert 'class="floor"' in page and "int4kv: mean KL per token" in page and ">–</text>" in page


def _details(view: Any) -> tuple[list[str], list[list[Any]]]:
    stored = json.loads(gzip.decompress(base64.b64decode(view.texts_blob)))
    return stored["texts"], stored["details"]


def test_the_browser_item_json_carries_the_strip() -> None:
    view = build_view(drift_report())
    assert view.browser.kl_scale["stops"] == KL_STOPS and view.browser.candidates == ["int4kv", "sparse"]
    ids = [it[0] for it in view.browser.items]
    texts, details = _details(view)
    text, lengths, total, (int4, sparse) = details[ids.index(FLIPPED)][8]
    assert texts[text] == "The number" + HOSTILE_TOKEN + "\n" and lengths == [3, 7, len(HOSTILE_TOKEN), 1]
    assert total == 4 and sparse is None
    codes, other, first, notes = int4
    assert other == [2] and first == 2 and notes == [["value", "fragile: baseline 0.52 vs 0.47 at token 2, KL 1 there"]]
    assert codes == [0, 186, 200, 192]  # round(20 * (log10 KL + 10)): 3 digits a token
    assert [kl_value(c) for c in codes] == pytest.approx([0.0, 0.2, 1.0, 0.4], rel=0.06)  # within half a step
    assert [kl_value(c) for c in details[ids.index("needle/L512-D0.50-0")][8][3][0][0]] == pytest.approx(
        [0.004, 0.002], rel=0.06)
    assert details[ids.index("docs/INV1/total")][8] == -1  # no candidate has a record: nothing stored
    # the rows stay as they were: the strip lives in the texts, unpacked when an item is opened
    assert "KL" not in json.dumps(view.browser.rows)


def test_strip_token_is_escaped_in_the_page() -> None:
    page = render_html_text(build_view(drift_report()))
    assert HOSTILE_TOKEN not in page and "window.pwned" not in page  # only inside the gzipped, base64 texts


def test_a_long_answer_is_cut_to_the_strip_budget() -> None:
    report = make_report()
    n = STRIP_TOKENS + 50
    report = with_drift(report, "int4kv", Drift("int4kv", [], None, per_item={FLIPPED: _row([1e-7] * n)}))
    view = build_view(report)
    ids = [it[0] for it in view.browser.items]
    texts, details = _details(view)
    text, lengths, total, (int4, _sparse) = details[ids.index(FLIPPED)][8]
    assert total == n and len(lengths) == len(int4[0]) == STRIP_TOKENS
    assert texts[text] == "·" * STRIP_TOKENS  # no decoded answer: a blank per token, still shaded
    assert kl_value(int4[0][0]) == pytest.approx(1e-7) and int4[1] == [] and int4[2] == -1


def test_kl_codes_round_trip_and_stay_json() -> None:
    for x in (1e-9, 3.3e-6, 0.0123, 0.5, 7.0, 40.0):
        assert kl_value(kl_code(x) or 0) == pytest.approx(x, rel=0.06)
    assert kl_code(0.0) == 0 and kl_code(1e-12) == 0 and kl_value(0) == 0.0
    assert kl_code(float("nan")) is None and kl_code(float("inf")) is None  # JSON has no NaN


def test_a_pack_without_accuracy_heatmaps_gets_mean_kl_by_length_bucket() -> None:
    report = drift_report()
    base, cand = report.scored["baseline"], report.scored["int4kv"]
    m = length_kl_map("needle", base, cand, report.drift["int4kv"])  # called directly: one row by bucket
    assert m is not None and m.heatmap.rows == ["all items"] and m.heatmap.cols == ["<=512", "<=1k"]
    [[short, long]] = m.heatmap.cells
    assert short is not None and short.n == 4 and short.value == pytest.approx((0.2 + 0.4 + 0.003 + 0.001) / 4)
    assert long is not None and long.n == 1 and long.value == pytest.approx(0.02)
    assert length_kl_map("docs", base, cand, report.drift["int4kv"]) is None  # one bucket: the drift table says it


def test_token_lengths_count_as_the_page_does() -> None:
    """The page cuts the stored answer by UTF-16 lengths: a character past the BMP counts twice."""
    from evalrun.reports.view.strip import _utf16_len

    assert [_utf16_len(t) for t in ("😀", "a", "é", "")] == [2, 1, 1, 0]


def test_many_items_share_the_strip_budget() -> None:
    """All strips together hold at most STRIP_CODES KL codes: with many items each shows fewer tokens."""
    from evalrun.reports.view.strip import STRIP_CODES, Strips

    drift = Drift("int4kv", [], None, per_item={"a": _row([0.1] * 100)}, tokens={"a": ["x"] * 100})
    few, many = Strips([drift, None], items=10), Strips([drift, None], items=STRIP_CODES // 20)
    assert len(few.of("a", lambda _t: 0)[1]) == 100  # type: ignore[index]
    text, lengths, total, (cand, none) = many.of("a", lambda _t: 7)  # type: ignore[misc]
    assert (text, len(lengths), total, len(cand[0]), none) == (7, 20, 100, 20, None)
