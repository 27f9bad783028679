"""The HTML report's data: character diffs, heatmap cells counted by hand, the
item browser's rows and de-duplicated texts, the speed table.

The synthetic runs (no model) come from tests/conftest.py.
"""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from evalrun.evals import api
from evalrun.evals.compare import diffable, opcodes, segments
from evalrun.reports.view import EMULATED_NOTE, OUTCOMES, build_view as build_report_data
from tests.conftest import DOC, DOC_SOURCE, HOSTILE_OUTPUT, make_report

@pytest.fixture(scope="module")
def data():  # type: ignore[no-untyped-def]
    return build_report_data(make_report())


# --------------------------------------------------------------------------- diffs


def test_diff_marks_the_dropped_digit() -> None:
    assert [(s.tag, s.a, s.b) for s in segments("14851.20", "1485.20")] == [
        ("equal", "1485", "1485"), ("delete", "1", ""), ("equal", ".20", ".20")]
    [op] = opcodes("14851.20", "1485.20")
    assert (op.tag, op.a0, op.a1, op.b0, op.b1) == ("delete", 4, 5, 4, 4)


def test_diff_changed_inserted_and_transposed_digits() -> None:
    assert [(s.tag, s.a, s.b) for s in segments("2024-03-05", "2024-03-06")][-1] == ("replace", "5", "6")
    assert [(o.tag, o.b0, o.b1) for o in opcodes("1485.20", "14851.20")] == [("insert", 4, 5)]
    changed = [s for s in segments("8964175", "8964715") if s.tag != "equal"]
    assert "".join(s.a for s in changed) == "7" and "".join(s.b for s in changed) == "7"  # one 7 moved past the 1
    assert "".join(s.a for s in segments("abc", "axc")) == "abc" and "".join(s.b for s in segments("abc", "axc")) == "axc"


def test_diffable_only_for_short_similar_values() -> None:
    assert diffable("14851.20", "1485.20")
    assert not diffable("14851.20", "14851.20")
    assert not diffable(None, "1") and not diffable("1", None)
    assert not diffable("8964175", "the answer is not in the text")
    assert not diffable("1" * 300, "1" * 299)


# --------------------------------------------------------------------------- heatmaps


def test_heatmap_cells_counted_by_hand(data) -> None:  # type: ignore[no-untyped-def]
    section = data.sections[0]
    [hs] = [h for h in section.heatmaps if h.pack == "needle"]
    assert hs.baseline.rows == ["0.00", "0.50", "1.00"] and hs.baseline.cols == ["512", "1k"]

    def grid(h):  # type: ignore[no-untyped-def]
        return [[c.value if c else None for c in row] for row in h.cells]

    # 2 needles per cell; baseline misses one at (512, 1.0); the candidate misses (512, 0.0) once,
    # (1024, 0.5) once and (1024, 1.0) twice, and finds the one the baseline missed
    assert grid(hs.baseline) == [[1.0, 1.0], [1.0, 1.0], [0.5, 1.0]]
    assert grid(hs.candidate) == [[0.5, 1.0], [1.0, 0.5], [1.0, 0.0]]
    assert grid(hs.difference) == [[-50.0, 0.0], [0.0, -50.0], [50.0, -100.0]]
    cell = hs.difference.cells[2][1]
    assert cell.n == 2 and cell.label == "-100" and "0/2 vs 2/2" in cell.tooltip
    assert hs.candidate.cells[0][0].label == "50" and "1/2 correct" in hs.candidate.cells[0][0].tooltip
    # colour-blind-safe palettes: a loss is orange, a gain blue, no change near white
    r, g, b = (int(cell.fill[i:i + 2], 16) for i in (1, 3, 5))
    assert r > b
    gain = hs.difference.cells[2][0]
    assert int(gain.fill[5:7], 16) > int(gain.fill[1:3], 16)
    assert all(c.ink in ("#000000", "#ffffff") for row in hs.candidate.cells for c in row if c)


# --------------------------------------------------------------------------- tables and verdict


def test_tables_and_verdict(data) -> None:  # type: ignore[no-untyped-def]
    assert not data.passed
    int4, sparse = data.verdicts
    assert not int4.passed and sparse.passed
    assert any(r.rule == "max_harmful_flips[number]" and r.measured == 4 and not r.passed for r in int4.rules)
    needle = next(p for p in data.sections[0].packs if p.pack == "needle")
    assert needle.n == 12 and needle.harmful_items == 4 and needle.helpful_items == 1
    assert needle.delta_points == pytest.approx(100 * (8 / 12 - 11 / 12))
    assert needle.ci_low_points is not None and needle.ci_low_points <= needle.delta_points <= needle.ci_high_points
    field = next(f for f in data.sections[0].fields if f.pack == "docs" and f.field == "total")
    assert (field.n, field.baseline_accuracy, field.candidate_accuracy, field.harmful_flips) == (1, 1.0, 0.0, 1)
    assert field.ci_low_points == pytest.approx(-100.0)


def test_speed_table_per_item_seconds_tokens_and_emulated(data) -> None:  # type: ignore[no-untyped-def]
    base, int4, sparse = data.speed
    assert base.items_timed == 15 and base.request_throughput == pytest.approx(15 / (15 * 0.8 / 4))  # batch shared
    assert int4.speedups["ttft_p50"].value == pytest.approx(2.0) and int4.speed_note is None
    assert int4.accuracy_delta_points == pytest.approx(100 * (9 - 14) / 15)  # 12 needles + 3 document items
    assert int4.effects == ["kv_cache: kv bytes ratio 0.25"]
    assert not sparse.speedups and EMULATED_NOTE in (sparse.speed_note or "")


def test_speed_table_speedups_memory_and_accuracy_interval(data) -> None:  # type: ignore[no-untyped-def]
    base, int4, sparse = data.speed
    # every int4kv item is exactly twice as fast: the ratio of medians is 2 and so is every resample's
    assert base.metrics["ttft"]["p50"] == pytest.approx(0.8 * (0.25 + 0.01 * 7))  # median of 15 items: the 8th
    ttft, tpot = int4.speedups["ttft_p50"], int4.speedups["tpot_p50"]
    assert (ttft.value, ttft.low, ttft.high) == pytest.approx((2.0, 2.0, 2.0))
    assert (tpot.value, tpot.low, tpot.high) == pytest.approx((2.0, 2.0, 2.0))
    assert base.metrics["tpot"]["p50"] == pytest.approx(0.8 * 0.7 / 9)  # decode seconds / (new tokens - 1)
    assert int4.memory_saved_bytes == int(2e9 * 0.8) - int(2e9 * 0.4)
    assert int4.kv_bytes_per_token == pytest.approx(46080 * 0.25)
    lo, hi = int4.accuracy_ci_low_points, int4.accuracy_ci_high_points
    assert lo is not None and hi is not None and lo <= int4.accuracy_delta_points <= hi <= 0 and lo < -20
    # the emulated method claims nothing about speed, memory or capacity, but still shows its accuracy
    assert not sparse.speedups and sparse.memory_saved_bytes is None
    assert sparse.requests_per_second_per_device is None and sparse.accuracy_delta_points == pytest.approx(0.0)
    # capacity: the measured request throughput (prefill included), each batch's time counted once
    assert base.requests_per_second_per_device == pytest.approx(base.request_throughput) == pytest.approx(15 / 3.0)
    assert data.capacity_note and "prefill included" in data.capacity_note and "batch size" in data.capacity_note


# --------------------------------------------------------------------------- item browser


def _stored(data) -> tuple[list[str], list[list]]:  # type: ignore[no-untyped-def]
    """(texts, per-item details) from the page's gzipped blob."""
    blob = json.loads(gzip.decompress(base64.b64decode(data.texts_blob)))
    return blob["texts"], blob["details"]


def test_rows_encode_flips_diffs_and_unchanged_cells(data) -> None:  # type: ignore[no-untyped-def]
    b = data.browser
    assert b.candidates == ["int4kv", "sparse"] and b.outcomes == OUTCOMES
    items = {it[0]: it for it in b.items}
    row = next(r for r in b.rows if b.items[r[0]][0] == "docs/INV1/total")
    assert row[2] == "14851.20 EUR" and row[3] == 0  # baseline value == gold
    texts, details = _stored(data)
    assert json.loads(texts[details[row[0]][7]]) == {"total": "EUR 14851.20"}  # the gold as written
    cell, same = row[7]
    assert same == 0  # sparse answered like the baseline
    value, outcome, sub, flip, ops = cell
    assert (value, b.outcomes[outcome], b.subcodes[sub], flip) == ("1485.20 EUR", "wrong_value", "digit_dropped", 1)
    assert ops == [3, 4, 5, 4, 4]  # delete gold[4:5], the "1"
    helpful = next(r for r in b.rows if b.items[r[0]][0] == "needle/L512-D1.00-0")
    assert helpful[7][0][3] == -1
    assert b.flips == 7  # 6 harmful (4 needles, the total, the hostile supplier) + 1 helpful
    assert "docs/INV1/supplier" in items


def test_prompts_are_stored_once_and_highlighted(data) -> None:  # type: ignore[no-untyped-def]
    texts, details = _stored(data)
    assert len(details) == len(data.browser.items)
    docs = {it[0]: d for it, d in zip(data.browser.items, details) if it[0].startswith("docs/")}
    assert len({d[0] for d in docs.values()}) == 1, "three questions about one document store it once"
    assert len({d[1] for d in docs.values()}) == 3
    head = texts[docs["docs/INV1/total"][0]]
    assert texts.count(head) == 1 and DOC in head
    [(s, e, f)] = docs["docs/INV1/total"][5]
    assert head[s:e] == DOC_SOURCE and data.browser.fields[f] == "total"
    needle = details[[it[0] for it in data.browser.items].index("needle/L1024-D0.50-0")]
    [(s, e, f)] = needle[5]
    assert texts[needle[0]][s:e].startswith("The special magic number for KeyA") and f == -1
    assert HOSTILE_OUTPUT in texts  # the full output, shown as text by the page


def test_documents_are_cut_around_highlights_when_over_budget() -> None:
    data = build_report_data(make_report(), max_text_bytes=1)  # nothing fits: the tightest cut
    texts, details = _stored(data)
    cut = [d for d in details if d[6] > 0]
    assert cut and data.texts_cut == len({d[0] for d in cut})
    for d in cut:
        head = texts[d[0]]
        assert "characters not stored in this report" in head
        for s, e, _ in d[5]:
            assert head[s:e] in (DOC_SOURCE,) or head[s:e].startswith("The special magic number")


def test_non_bmp_text_offsets_are_utf16() -> None:
    report = make_report()
    run = report.baseline
    item = run.items[0]
    emoji = item.model_copy(update={"prompt": "🙂🙂 intro\n\n" + item.prompt.split("\n\n", 1)[1]})
    run.items[0] = emoji
    for r in (report.baseline, *(c.run for c in report.candidates)):
        g = r.generations[item.id]
        r.generations[item.id] = g.model_copy(update={"prompt_hash": emoji.prompt_hash})
    data = build_report_data(api.compare_results(report.baseline, [(c.run, None) for c in report.candidates]))
    texts, details = _stored(data)
    head = texts[details[0][0]]
    s, e, _ = details[0][5][0]
    js = head.encode("utf-16-le")  # what a browser's string indices count
    assert js[2 * s:2 * e].decode("utf-16-le") == emoji.meta["needle"]


@pytest.mark.parametrize(("first", "identical", "n", "cell"), [
    ((), 4, 4, "-"),  # every output identical: nothing diverged
    ((), 2, 4, "n/a"),  # outputs differ but the runs kept no token ids to say where
    ((5,), 3, 4, "5 (med 5)"),
    ((9, 0, 4), 1, 4, "0 (med 4)"),  # token 0: the very first generated token already differs
    ((2, 6, 3, 8), 0, 4, "2 (med 4.5)"),
])
def test_the_first_divergent_token_reads_earliest_and_median(first: tuple, identical: int, n: int, cell: str) -> None:
    from evalrun.reports.text import units

    assert units.divergence_cell(first, identical, n) == cell


def test_the_first_divergent_token_of_each_pack_is_where_the_outputs_part() -> None:
    report = make_report()
    comp = report.comparisons[0]
    for pc in comp.packs:
        base, cand = report.baseline.generations, comp_run(report, comp.candidate).generations
        expected = []
        for item_id in pc.item_ids:
            a, b = base[item_id].output_ids, cand[item_id].output_ids
            if a != b:
                expected.append(next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b))))
        assert sorted(pc.first_divergence) == sorted(expected) and len(expected) == pc.n - pc.identical_outputs


def comp_run(report: "api.CompareReport", name: str):  # type: ignore[no-untyped-def]
    return next(c.run for c in report.candidates if c.name == name)
