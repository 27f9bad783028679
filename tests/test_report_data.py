"""The HTML report's data: character diffs, heatmap cells counted by hand, the
item browser's rows and de-duplicated texts, the speed table.

The synthetic runs built here (no model) are reused by tests/test_html_report.py.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest

from evals import api
from evals.diffs import diffable, opcodes, segments
from evals.execute import RunResult
from evals.report_data import EMULATED_NOTE, OUTCOMES, build_report_data
from evals.store import RunStore
from evals.types import Field, Generation, Item

HOSTILE_OUTPUT = "<img src=x onerror=\"window.pwned=true;document.title='pwned'\"></textarea><script>window.pwned=true</script>"
HOSTILE_GOLD = "<script>window.pwned=true</script></textarea>"
LENGTHS, DEPTHS = [512, 1024], [0.0, 0.5, 1.0]
# (length, depth, i) -> how the run answers the needle; everything else is answered correctly
BASE_WRONG = {(512, 1.0, 0)}
CAND_WRONG = {(512, 0.0, 1), (1024, 0.5, 0), (1024, 1.0, 0), (1024, 1.0, 1)}
DOC = ("INVOICE\n\n" + " ".join(f"Clause {k} of the agreement stays in force." for k in range(60))
       + " The total amount due is EUR 14,851.20. " + " ".join(f"Remark {k} for the file." for k in range(40)))
DOC_SOURCE = "The total amount due is EUR 14,851.20."


def _needle_items() -> list[Item]:
    items = []
    for length in LENGTHS:
        for depth in DEPTHS:
            for i in range(2):
                value = f"{7000000 + 1000 * length // 512 + int(depth * 100) + i}"
                needle = f"The special magic number for Key{chr(65 + i)} is {value}."
                filler = [f"Filler sentence number {chr(97 + k % 26)} in the haystack." for k in range(length // 16)]
                at = round(depth * len(filler))
                text = " ".join([*filler[:at], needle, *filler[at:]])
                prompt = f"Read the text.\n\n{text}\n\nQuestion: What is the special magic number for Key{chr(65 + i)}?"
                items.append(Item(id=f"needle/L{length}-D{depth:.2f}-{i}", pack="needle", prompt=prompt,
                                  fields=[Field(name="value", kind="number", gold=value)],
                                  meta={"context_tokens": length - 10, "target_tokens": length, "depth": depth,
                                        "value_kind": "integer", "needle": needle}))
    return items


def _doc_items() -> list[Item]:
    """Three questions about one document: the document must be stored once."""
    out = []
    for name, kind, gold in (("total", "amount", "EUR 14851.20"), ("supplier", "text", HOSTILE_GOLD),
                             ("term", "number", None)):
        prompt = f"Read the invoice below.\n\n{DOC}\n\nWhat is the {name}?"
        out.append(Item(id=f"docs/INV1/{name}", pack="docs", prompt=prompt, fields=[Field(name=name, kind=kind, gold=gold)],
                        meta={"answer_format": "text", "context_tokens": 900, "target_tokens": 1024, "field": name,
                              "doc_id": "INV1", "field_depth": 0.6 if gold else None,
                              "source": DOC_SOURCE if name == "total" else None}))
    return out


def _answer(item: Item, wrong: bool, hostile: bool) -> str:
    gold = item.fields[0].gold
    if item.pack == "docs":
        name = item.fields[0].name
        if name == "total":
            return "The total is EUR 1,485.20." if wrong else "The total is EUR 14,851.20."
        if name == "supplier":
            return HOSTILE_OUTPUT if hostile else gold or ""
        return "There is no term in this invoice."
    return f"The number is {gold[:-1]}." if wrong else f"The number is {gold}."


def make_run(name: str, items: list[Item], wrong: set, *, hostile: bool = False, seconds: float = 0.8,
             batch: int = 4, new_tokens: int = 10, emulated: list[str] | None = None) -> RunResult:
    """Timings scale with `seconds`: a quarter of the batch's time is prefill (varying a little per item),
    the rest decode, so a run with half the seconds is exactly 2x faster on every item."""
    gens = {}
    for k, it in enumerate(items):
        m = it.meta
        is_wrong = (m.get("target_tokens"), m.get("depth"), int(it.id[-1]) if it.id[-1].isdigit() else 0) in wrong \
            if it.pack == "needle" else ("docs" in wrong)
        gens[it.id] = Generation(item_id=it.id, pack=it.pack, prompt_hash=it.prompt_hash,
                                 output=_answer(it, is_wrong, hostile), new_tokens=new_tokens, seconds=seconds,
                                 batch_size=batch, prompt_tokens=it.meta.get("context_tokens", 100),
                                 prefill_seconds=seconds * (0.25 + 0.01 * k), decode_seconds=seconds * 0.7)
    accel = {} if name == "baseline" else {"kv_cache": {"quant": name, "backend": "quanto"}}
    speed = {"peak_memory": {"bytes": int(2e9 * seconds), "kind": "process_peak_rss", "scope": "run"},
             "kv_cache": {"bytes_per_token": 46080.0 * (0.25 if accel else 1.0), "longest_context_tokens": 1024,
                          "bytes_at_longest_context": round(46080 * (0.25 if accel else 1.0) * 1024)}}
    manifest = {"name": name, "device": "cpu", "dtype": "float32", "load_seconds": 1.5, "speed": speed,
                "config": {"model": "synthetic", "acceleration": accel}, "emulated": emulated or [],
                "effects": {"kv_cache": {"kv_bytes_ratio": 0.25}} if accel else {}}
    return RunResult(name, Path(f"/runs/{name}"), items, gens, manifest)


def make_report(hostile: bool = True):  # type: ignore[no-untyped-def]
    """baseline, `int4kv` (needle and document flips, a hostile output) and an emulated `sparse` (no flips)."""
    items = _needle_items() + _doc_items()
    base = make_run("baseline", items, BASE_WRONG, seconds=0.8, batch=4, new_tokens=10)
    cand = make_run("int4kv", items, CAND_WRONG | {"docs"}, hostile=hostile, seconds=0.4, batch=4, new_tokens=10)
    sparse = make_run("sparse", items, BASE_WRONG, seconds=0.2, batch=4, emulated=["activation_sparsity"])
    return api.compare_results(base, [(cand, None), (sparse, None)])


def write_runs(root: Path, report) -> list[Path]:  # type: ignore[no-untyped-def]
    """Store the report's runs on disk as `evalrun` would (for `evalrun report`)."""
    dirs = []
    for run in [report.baseline, *report.candidates]:
        store = RunStore(root / run.name)
        store.dir.mkdir(parents=True)
        store.write_items(run.items)
        for g in run.generations.values():
            store.append(g)
        store.write_manifest(run.manifest)
        dirs.append(store.dir)
    return dirs


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
    assert base.seconds_per_item == pytest.approx(0.8 / 4)  # the batch's wall time shared by its items
    assert base.new_tokens_per_second == pytest.approx(10 / 0.2)
    assert int4.speedup == pytest.approx(2.0) and int4.speed_note is None
    assert int4.accuracy_delta_points == pytest.approx(100 * (9 - 14) / 15)  # 12 needles + 3 document items
    assert int4.effects == ["kv_cache: kv bytes ratio 0.25"]
    assert sparse.speedup is None and EMULATED_NOTE in (sparse.speed_note or "")


def test_speed_table_speedups_memory_and_accuracy_interval(data) -> None:  # type: ignore[no-untyped-def]
    base, int4, sparse = data.speed
    # every int4kv item is exactly twice as fast: the ratio of medians is 2 and so is every resample's
    assert base.ttft_p50 == pytest.approx(0.8 * (0.25 + 0.01 * 7))  # median of 15 items: the 8th
    assert int4.ttft_speedup == pytest.approx(2.0) and int4.ttft_speedup_low == pytest.approx(2.0)
    assert int4.decode_speedup == pytest.approx(2.0) and int4.decode_speedup_high == pytest.approx(2.0)
    assert base.decode_tps_p50 == pytest.approx(9 / (0.8 * 0.7))  # (new tokens - 1) / decode seconds
    assert int4.memory_saved_bytes == int(2e9 * 0.8) - int(2e9 * 0.4)
    assert int4.kv_bytes_per_token == pytest.approx(46080 * 0.25)
    lo, hi = int4.accuracy_ci_low_points, int4.accuracy_ci_high_points
    assert lo is not None and hi is not None and lo <= int4.accuracy_delta_points <= hi <= 0 and lo < -20
    # the emulated method claims nothing about speed, memory or capacity, but still shows its accuracy
    assert sparse.ttft_speedup is sparse.decode_speedup is sparse.memory_saved_bytes is None
    assert sparse.requests_per_second_per_device is None and sparse.accuracy_delta_points == pytest.approx(0.0)
    # capacity: decode-bound at the run's aggregate decode throughput and the baseline's mean output length
    # each batch's decode wall time counted once: (seconds - prefill) / batch size summed over the 15 items
    decode_wall = sum((0.8 - 0.8 * (0.25 + 0.01 * k)) / 4 for k in range(15))
    assert base.decode_throughput == pytest.approx(15 * 9 / decode_wall)
    assert base.requests_per_second_per_device == pytest.approx(base.decode_throughput / 10)
    assert data.capacity_note and "decode-bound" in data.capacity_note and "batch size" in data.capacity_note


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
    for r in (report.baseline, *report.candidates):
        g = r.generations[item.id]
        r.generations[item.id] = g.model_copy(update={"prompt_hash": emoji.prompt_hash})
    data = build_report_data(api.compare_results(report.baseline, [(c, None) for c in report.candidates]))
    texts, details = _stored(data)
    head = texts[details[0][0]]
    s, e, _ = details[0][5][0]
    js = head.encode("utf-16-le")  # what a browser's string indices count
    assert js[2 * s:2 * e].decode("utf-16-le") == emoji.meta["needle"]
