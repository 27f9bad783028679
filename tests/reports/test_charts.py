"""The report's inline SVG charts: valid XML, escaped untrusted names, every input drawn once,
unplottable values skipped (never "nan" in a coordinate), the gate region where the scale puts it,
and small, deterministic output."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.reports.charts import (
    Curve, CurvePoint, DistributionSeries, GateRegion, ScatterPoint, format_latency, latency_distribution,
    latency_throughput_curves, log_ticks, nice_ticks, scatter_scales, speed_accuracy_scatter, tick_labels,
)

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = ["<script>alert(1)</script>", '" onmouseover="x', "&amp;", "\"><b>"]


def _root(svg: str) -> ET.Element:
    root = ET.fromstring(str(svg))
    assert root.tag == f"{NS}svg" and root.get("role") == "img" and root.get("aria-label")
    assert root.find(f"{NS}title") is not None and root.find(f"{NS}title").text
    assert root.find(f"{NS}desc") is not None
    return root


def _with_class(root: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in root.iter() if cls in (e.get("class") or "").split()]


def _texts(el: ET.Element) -> list[str]:
    return [e.text for e in el.iter(f"{NS}text") if e.text]


def _centre(marker: ET.Element) -> tuple[float, float]:
    if marker.tag == f"{NS}circle":
        return float(marker.get("cx")), float(marker.get("cy"))
    assert marker.tag == f"{NS}rect"
    return (float(marker.get("x")) + float(marker.get("width")) / 2,
            float(marker.get("y")) + float(marker.get("height")) / 2)


def _no_nonfinite(svg: str) -> None:
    low = str(svg).lower()
    assert "nan" not in low and "inf" not in low


def _point(label: str = "int4kv · docs", x: float = 1.5, y: float = -0.4, status: str | None = "pass",
           interval: bool = True) -> ScatterPoint:
    if interval:
        return ScatterPoint(label, x, x - 0.1, x + 0.1, y, y - 0.8, y + 0.8, status)
    return ScatterPoint(label, x, None, None, y, None, None, status)


def _scatter(points: list[ScatterPoint], region: GateRegion | None = GateRegion(1.3, 1.0)) -> str:
    return str(speed_accuracy_scatter(points, region, "speedup (×)", "accuracy change (points)", "Speed vs accuracy"))


def _curves(curves: list[Curve], slo: float | None = 60.0, label: str = "SLO 60 ms") -> str:
    return str(latency_throughput_curves(curves, "throughput (requests/s)", "TPOT p99 (ms)", "Load sweep", slo, label))


def _sweep(name: str = "int4kv", best: int | None = 2) -> Curve:
    pts = [CurvePoint(2.0 * c, 20 + 3 * c, f"{c} concurrent", 20 + 3 * c <= 60) for c in (1, 2, 4, 8, 16)]
    return Curve(name, pts, best)


def _dist(run: str = "baseline", n: int = 200, scale: float = 0.02) -> DistributionSeries:
    values = [scale * (0.5 + i / n) for i in range(n)]
    return DistributionSeries(run, values, {"p50": 0.012, "p95": 0.020, "p99": 0.031})


# -- ticks ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("low, high", [(0, 10), (-3.7, -0.2), (0.013, 0.031), (-2.5, 1.0), (1.0, 1.0 + 1e-6),
                                       (3, 1), (0, 1e11), (1e-20, 3e-20)])
def test_nice_ticks_cover_the_range_in_1_2_5_steps(low: float, high: float) -> None:
    ticks = nice_ticks(low, high)
    assert ticks[0] <= min(low, high) and ticks[-1] >= max(low, high)
    steps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert all(s > 0 for s in steps) and max(steps) == pytest.approx(min(steps), rel=1e-6)
    mantissa = steps[0] / 10 ** math.floor(math.log10(steps[0]) + 1e-9)
    assert round(mantissa, 6) in (1, 2, 5)
    assert 3 <= len(ticks) <= 8


def test_nice_ticks_edge_cases() -> None:
    assert nice_ticks(0, 10) == [0, 2, 4, 6, 8, 10]
    assert nice_ticks(0.1, 0.3) == [0.1, 0.15, 0.2, 0.25, 0.3]  # no 0.30000000000000004
    single = nice_ticks(5, 5)  # one value: widened around it
    assert single[0] < 5 < single[-1]
    assert nice_ticks(0, 0)[0] < 0 < nice_ticks(0, 0)[-1]
    negative = nice_ticks(-2.5, -2.5)
    assert negative[0] < -2.5 < negative[-1] and all(t < 0 for t in negative)
    assert nice_ticks(-1, 1) == [-1, -0.5, 0, 0.5, 1] and all(str(t) != "-0.0" for t in nice_ticks(-1, 1))
    assert nice_ticks(math.nan, 1) == [] and nice_ticks(0, math.inf) == []
    assert nice_ticks(-1e308, 1e308) == []  # a span floats cannot hold: no ticks rather than an error


def test_log_ticks_edge_cases() -> None:
    assert log_ticks(1, 1000) == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
    assert log_ticks(1, 1e6) == [1, 10, 100, 1000, 1e4, 1e5, 1e6]  # too many 1-2-5s: powers of ten
    wide = log_ticks(1e-3, 1e12)
    assert len(wide) <= 8 and all(math.log10(t) == round(math.log10(t)) for t in wide)
    assert log_ticks(0.8, 4) == [0.8, 0.9, 1, 2, 3, 4]  # too few 1-2-5s: every digit
    inside = log_ticks(1.1, 1.9)  # no power-law tick inside: linear ones inside the range
    assert len(inside) >= 2 and all(1.1 <= t <= 1.9 for t in inside)
    assert log_ticks(2, 2) == [2]
    from_zero = log_ticks(0, 10)  # 0 has no log position: ticks start somewhere above it
    assert from_zero and all(0 < t <= 10 for t in from_zero)
    assert log_ticks(-5, -1) == [] and log_ticks(math.nan, 3) == []
    assert log_ticks(1000, 1) == log_ticks(1, 1000)


def test_tick_labels_use_the_step_decimals_and_a_real_minus() -> None:
    assert tick_labels([-1, -0.5, 0, 0.5, 1]) == ["\u22121.0", "\u22120.5", "0.0", "0.5", "1.0"]
    assert tick_labels([0, 20, 40]) == ["0", "20", "40"]
    assert tick_labels([1, 2, 5, 10], log=True) == ["1", "2", "5", "10"]


def test_format_latency() -> None:
    assert format_latency(0.031) == "31.0 ms"
    assert format_latency(0.0042) == "4.20 ms"
    assert format_latency(0.3124) == "312 ms"
    assert format_latency(12.34, "s") == "12.3 s"


# -- speed vs accuracy -----------------------------------------------------------------------------

def test_scatter_draws_each_point_once_with_its_label_and_error_bars() -> None:
    points = [_point("a · docs"), _point("b · needles", 1.2, -2.0, "fail", interval=False),
              _point("c", 1.8, 0.3, "incomplete")]
    root = _root(_scatter(points))
    groups = _with_class(root, "ch-point")
    assert len(groups) == 3
    assert [_texts(g) for g in groups] == [["a · docs"], ["b · needles"], ["c"]]
    with_bars = [bool(_with_class(g, "ch-err-x")) and bool(_with_class(g, "ch-err-y")) for g in groups]
    assert with_bars == [True, False, True]
    assert len(_with_class(root, "ch-ref")) == 1  # the x = 1 and y = 0 lines
    legend = _texts(_with_class(root, "ch-legend")[0])
    assert legend == ["pass", "fail", "incomplete", "gate passes here"]


def test_gate_region_covers_the_passing_side_through_the_same_scale() -> None:
    points = [_point(), _point("slow", 1.1, -2.5, "fail")]
    region = GateRegion(min_speedup=1.3, max_drop=1.0)
    rects = _with_class(_root(_scatter(points, region)), "ch-gate")
    assert len(rects) == 1
    sx, sy = scatter_scales(points, region)
    x, y = float(rects[0].get("x")), float(rects[0].get("y"))
    assert x == pytest.approx(sx(1.3), abs=0.051)
    assert x + float(rects[0].get("width")) == pytest.approx(sx.end, abs=0.1)  # to the right edge
    assert y == pytest.approx(sy.end, abs=0.051)  # from the top (better accuracy)
    assert y + float(rects[0].get("height")) == pytest.approx(sy(-1.0), abs=0.1)  # down to -max_drop
    assert sx.lo <= 1.0 < 1.3 < sx.hi and sy.lo <= -2.5

    assert _with_class(_root(_scatter(points, None)), "ch-gate") == []
    no_legend = _root(_scatter([_point(status=None)], None))
    assert _with_class(no_legend, "ch-legend") == []  # one kind of point, no region: nothing to explain


def test_gate_region_with_an_unbounded_side_runs_to_the_plot_edge() -> None:
    points = [_point(), _point("slow", 1.1, -2.5, "fail")]
    sx, sy = scatter_scales(points, GateRegion(None, 2.0))
    rect = _with_class(_root(_scatter(points, GateRegion(None, 2.0))), "ch-gate")[0]
    assert float(rect.get("x")) == pytest.approx(sx.start, abs=0.051)
    assert float(rect.get("y")) + float(rect.get("height")) == pytest.approx(sy(-2.0), abs=0.1)
    sx, sy = scatter_scales(points, GateRegion(1.4, None))
    rect = _with_class(_root(_scatter(points, GateRegion(1.4, None))), "ch-gate")[0]
    assert float(rect.get("x")) == pytest.approx(sx(1.4), abs=0.051)
    assert float(rect.get("y")) + float(rect.get("height")) == pytest.approx(sy.start, abs=0.1)


def test_scatter_x_is_log_only_past_a_factor_of_4() -> None:
    narrow = [_point("a", 1.2), _point("b", 2.5)]
    wide = [_point("a", 1.2), _point("b", 6.5)]
    assert not scatter_scales(narrow, None)[0].log
    sx, _ = scatter_scales(wide, None)
    assert sx.log and sx.lo < 1.0 and sx.hi > 6.6
    root = _root(_scatter(wide, None))
    ticks = [e.text for e in _with_class(root, "ch-tick")]
    assert {"1", "2", "5"} <= set(ticks)
    positions = {e.text: float(e.get("x")) for e in _with_class(root, "ch-tick") if e.text in ("1", "2", "5")}
    assert positions["2"] == pytest.approx(sx(2.0), abs=0.051) and positions["5"] == pytest.approx(sx(5.0), abs=0.051)


def test_scatter_skips_unplottable_points_and_intervals() -> None:
    points = [_point("ok"), ScatterPoint("nan x", math.nan, None, None, 0.1, None, None),
              ScatterPoint("inf y", 1.2, 1.1, 1.3, math.inf, None, None),
              ScatterPoint("zero speed", 0.0, None, None, 0.0, None, None),
              ScatterPoint("half interval", 1.4, math.nan, 1.5, 0.2, None, -math.inf)]
    svg = _scatter(points)
    _no_nonfinite(svg)
    groups = _with_class(_root(svg), "ch-point")
    assert [_texts(g) for g in groups] == [["ok"], ["half interval"]]
    assert not _with_class(groups[1], "ch-err-x") and not _with_class(groups[1], "ch-err-y")


# -- latency vs throughput -------------------------------------------------------------------------

def test_curves_draw_each_series_and_point_with_labels_hollow_and_best() -> None:
    root = _root(_curves([_sweep("bf16"), _sweep("int4kv", best=1)]))
    curves = _with_class(root, "ch-curve")
    assert len(curves) == 2 and len(_with_class(root, "ch-cpoint")) == 10
    assert [len(c.findall(f"{NS}polyline")) for c in curves] == [1, 1]
    labels = [_texts(p)[0] for p in _with_class(curves[0], "ch-cpoint")]
    assert labels == ["1 concurrent", "2 concurrent", "4 concurrent", "8 concurrent", "16 concurrent"]
    hollow = [bool(_with_class(p, "ch-hollow")) for p in _with_class(curves[0], "ch-cpoint")]
    assert hollow == [False, False, False, False, True]  # 20 + 3*16 = 68 > 60: misses
    assert all(e.get("fill") == "#ffffff" for e in _with_class(root, "ch-hollow"))
    for curve, best in zip(curves, (2, 1)):
        rings = _with_class(curve, "ch-best")
        assert len(rings) == 1 and _texts(rings[0]) == ["best"]
        marker = _with_class(_with_class(curve, "ch-cpoint")[best], "ch-marker")[0]
        ring = rings[0].find(f"{NS}circle")
        assert (float(ring.get("cx")), float(ring.get("cy"))) == pytest.approx(_centre(marker), abs=0.051)
    legend = _texts(_with_class(root, "ch-legend")[0])
    assert legend == ["bf16", "int4kv", "misses the SLO"]


def test_slo_line_only_with_an_slo() -> None:
    with_slo = _with_class(_root(_curves([_sweep()], 60.0, "TPOT p99 ≤ 60 ms")), "ch-slo")
    assert len(with_slo) == 1 and _texts(with_slo[0]) == ["TPOT p99 ≤ 60 ms"]
    assert with_slo[0].find(f"{NS}path").get("stroke-dasharray")
    assert _with_class(_root(_curves([_sweep()], None)), "ch-slo") == []
    assert _with_class(_root(_curves([_sweep()], math.nan)), "ch-slo") == []
    assert _texts(_with_class(_root(_curves([_sweep()], 60.0, "")), "ch-slo")[0]) == ["SLO 60"]


def test_curves_skip_unplottable_points_and_a_best_among_them() -> None:
    pts = [CurvePoint(1.0, 10.0, "a"), CurvePoint(math.nan, 12.0, "b"), CurvePoint(3.0, math.inf, "c"),
           CurvePoint(4.0, 14.0, "d")]
    svg = _curves([Curve("x", pts, best=1), Curve("empty", [CurvePoint(math.nan, math.nan, "z")])])
    _no_nonfinite(svg)
    root = _root(svg)
    assert len(_with_class(root, "ch-curve")) == 1
    assert [_texts(p)[0] for p in _with_class(root, "ch-cpoint")] == ["a", "d"]
    assert _with_class(root, "ch-best") == []  # the best point had no position
    assert _with_class(root, "ch-legend") == []  # one series drawn


# -- latency distributions -------------------------------------------------------------------------

def test_distribution_marks_show_the_given_percentiles_in_ms() -> None:
    root = _root(latency_distribution([_dist("baseline"), _dist("int4kv", scale=0.015)], "TPOT", "TPOT per run"))
    cdfs = _with_class(root, "ch-cdf")
    assert len(cdfs) == 2
    for cdf in cdfs:
        labels = [e.text for e in _with_class(cdf, "ch-mark-label")]
        assert labels == ["p50 12.0 ms", "p95 20.0 ms", "p99 31.0 ms"]
    assert "TPOT (ms)" in [e.text for e in _with_class(root, "ch-axis-title")]
    assert "share of requests" in [e.text for e in _with_class(root, "ch-axis-title")]
    assert _texts(_with_class(root, "ch-legend")[0]) == ["baseline", "int4kv"]
    # the labels of the two runs do not sit on top of each other
    boxes = [(float(e.get("x")), float(e.get("y"))) for e in _with_class(root, "ch-mark-label")]
    assert len(set(boxes)) == len(boxes)


def test_distribution_tick_sits_on_the_curve_at_the_share_below_the_mark() -> None:
    values = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    root = _root(latency_distribution([DistributionSeries("r", values, {"p50": 0.050})], "TTFT", "TTFT"))
    tick = _with_class(root, "ch-mark")[0].find(f"{NS}path").get("d")  # "M{x} {y-6}v12"
    top = float(tick.split()[1].split("v")[0])
    axis = {e.text: float(e.get("y")) for e in _with_class(root, "ch-tick") if e.text in ("0.0", "1.0")}
    share = (axis["0.0"] - (top + 6)) / (axis["0.0"] - axis["1.0"])
    assert share == pytest.approx(0.5, abs=0.01)


def test_distribution_switches_to_seconds_past_10_s() -> None:
    series = DistributionSeries("slow", [5.0 + i * 0.1 for i in range(100)], {"p50": 9.95, "p99": 14.9})
    root = _root(latency_distribution([series], "TTFT", "TTFT"))
    assert [e.text for e in _with_class(root, "ch-mark-label")] == ["p50 9.95 s", "p99 14.9 s"]
    assert "TTFT (s)" in [e.text for e in _with_class(root, "ch-axis-title")]


def test_distribution_is_small_and_exact_for_long_runs() -> None:
    series = DistributionSeries("big", [0.01 + (i * 7919 % 10000) / 1e6 for i in range(10000)],
                                {"p50": 0.015, "p99": 0.0199})
    svg = str(latency_distribution([series], "TPOT", "TPOT"))
    assert len(svg.encode()) < 60_000
    path = _with_class(_root(svg), "ch-cdf")[0].find(f"{NS}path").get("d")
    assert path.count("V") <= 400
    assert [e.text for e in _with_class(_root(svg), "ch-mark-label")] == ["p50 15.0 ms", "p99 19.9 ms"]


def test_distribution_skips_unplottable_values_and_marks() -> None:
    series = [DistributionSeries("r", [0.01, math.nan, math.inf, 0.02, -math.inf], {"p50": math.nan, "p90": 0.02}),
              DistributionSeries("none", [math.nan], {"p50": 0.01})]
    svg = str(latency_distribution(series, "TPOT", "TPOT"))
    _no_nonfinite(svg)
    root = _root(svg)
    assert len(_with_class(root, "ch-cdf")) == 1
    assert [e.text for e in _with_class(root, "ch-mark-label")] == ["p90 20.0 ms"]


# -- across the three charts -------------------------------------------------------------------------

def _all_three(name: str) -> list[str]:
    return [_scatter([_point(name)]), _curves([_sweep(name), _sweep("other")]),
            str(latency_distribution([_dist(name), _dist("other")], "TPOT", name))]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_text(name: str) -> None:
    for svg in _all_three(name):
        root = _root(svg)
        assert not [e for e in root.iter() if e.tag.split("}")[-1].lower() in ("script", "b", "a", "foreignobject")]
        assert all(not k.startswith("on") for e in root.iter() for k in e.attrib)
        assert any(t == name or t.startswith(name) for t in _texts(root) + [root.find(f"{NS}title").text])
        assert "<script" not in svg


def test_empty_inputs_say_no_data() -> None:
    charts = [_scatter([]), _scatter([ScatterPoint("x", math.nan, None, None, 0.0, None, None)]), _curves([]),
              _curves([Curve("x", [])]), str(latency_distribution([], "TPOT", "TPOT")),
              str(latency_distribution([DistributionSeries("x", [], {})], "TPOT", "TPOT"))]
    for svg in charts:
        root = _root(svg)
        assert [e.text for e in _with_class(root, "ch-empty")] == ["no data"]


def test_output_is_deterministic() -> None:
    assert _all_three("int4kv") == _all_three("int4kv")


def test_svg_scales_by_its_viewbox_and_is_self_contained() -> None:
    for svg in _all_three("int4kv"):
        root = _root(svg)
        assert root.get("viewBox") == "0 0 640 360" and root.get("width") == "100%"
        assert "max-width" in root.get("style")
        assert "href" not in svg and "url(" not in svg and "@import" not in svg and "<image" not in svg


finite_or_not = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                          st.floats(-1e3, 1e3, allow_nan=False))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(*[finite_or_not] * 6), max_size=6),
       st.tuples(finite_or_not, finite_or_not))
def test_scatter_never_emits_a_nonfinite_coordinate(rows: list, region: tuple) -> None:
    points = [ScatterPoint("p", *row[:2], row[2], *row[3:]) if row[0] is not None and row[3] is not None
              else ScatterPoint("p", 1.0, None, None, 0.0, None, None) for row in rows]  # type: ignore[arg-type]
    svg = _scatter(points, GateRegion(*region))
    _no_nonfinite(svg)
    _root(svg)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.tuples(st.floats(), st.floats()), max_size=5), max_size=3),
       st.lists(st.floats(), max_size=30), st.one_of(st.none(), st.floats()))
def test_curves_and_distributions_never_emit_a_nonfinite_coordinate(curves: list, values: list, slo: float) -> None:
    svg = _curves([Curve(f"c{i}", [CurvePoint(x, y, "k") for x, y in pts], best=0) for i, pts in enumerate(curves)],
                  slo)
    _no_nonfinite(svg)
    _root(svg)
    svg = str(latency_distribution([DistributionSeries("r", values, {"p50": slo or 0.0})], "TPOT", "TPOT"))
    _no_nonfinite(svg)
    _root(svg)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False), st.floats(allow_nan=False), st.integers(1, 12))
def test_ticks_never_raise_and_cover_what_they_can(a: float, b: float, count: int) -> None:
    ticks = nice_ticks(a, b, count)
    if ticks:
        slack = 1e-9 * (ticks[1] - ticks[0])
        assert ticks[0] <= min(a, b) + slack and ticks[-1] >= max(a, b) - slack and len(ticks) <= count + 3
        assert len(set(tick_labels(ticks))) == len(ticks)  # no two ticks read the same
    logs = log_ticks(a, b)
    assert all(t > 0 and math.isfinite(t) for t in logs) and len(set(tick_labels(logs, True))) == len(logs)
