"""samples_df / fields_df over real stored runs (written by the store, no model): the documented
columns and dtypes, one row per generation and per field, flips equal to the gate's pairing,
errors, hostile text through Parquet and CSV, and fail-closed reading that never writes."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pyarrow.parquet as pq
import pytest

import evalrun
from evalrun.contract import Generation
from evalrun.evals.timing import latency
from evalrun.evals.files import ConfigError
from evalrun.evals.run import RunFailed
from evalrun.evals.frames import COLUMNS, FIELD_COLUMNS, SAMPLE_COLUMNS, frame_bytes, read_csv
from evalrun.evals.results import RunResult
from tests.conftest import ROOT, make_report, write_runs

HOSTILE = ["<script>alert(1)</script>", "a | b || c", "line one\nline two\r\nthree\r", "=cmd|' /C calc'!A0",
           "+1+1", "-2", "@SUM(A1)", '"quoted", and, commas', "tab\there", "\u2028\u2029\u0085 nul\x00 end", "  "]


def _dtypes(mapping: dict[str, str]) -> list[object]:
    return [pd.array([], dtype=d).dtype for d in mapping.values()]


def _with_outputs(run: RunResult, outputs: dict[str, Generation]) -> RunResult:
    return dataclasses.replace(run, generations={**run.generations, **outputs})


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    return make_report()


@pytest.fixture
def stored(tmp_path: Path, report) -> list[Path]:  # type: ignore[no-untyped-def]
    """baseline, int4kv (flips, a hostile output), sparse: on disk as evalrun stores them."""
    return write_runs(tmp_path / "runs", report)


def _without_first(run: RunResult) -> RunResult:
    """The run with its first item not generated yet (a partial run)."""
    first = run.items[0].id
    return dataclasses.replace(run, generations={k: g for k, g in run.generations.items() if k != first})


def _store(root: Path, *runs: RunResult) -> list[Path]:
    return write_runs(root, SimpleNamespace(baseline=runs[0], candidates=[SimpleNamespace(run=r) for r in runs[1:]]))


def test_columns_and_dtypes_are_the_documented_ones(stored: list[Path]) -> None:
    for table, df in (("samples", evalrun.samples_df(stored, log=None)), ("fields", evalrun.fields_df(stored, log=None))):
        assert list(df.columns) == list(COLUMNS[table])
        assert list(df.dtypes) == _dtypes(COLUMNS[table]), table


def test_an_empty_table_keeps_its_dtypes(tmp_path: Path, report) -> None:  # type: ignore[no-untyped-def]
    empty = RunResult("empty", Path("/runs/empty"), report.baseline.items, {}, report.baseline.manifest)
    dirs = _store(tmp_path, empty)
    for df, mapping in ((evalrun.samples_df(dirs, log=None), SAMPLE_COLUMNS),
                        (evalrun.fields_df(dirs, log=None), FIELD_COLUMNS)):
        assert len(df) == 0 and list(df.dtypes) == _dtypes(mapping)


def test_the_manual_documents_every_column_and_dtype() -> None:
    section = (ROOT / "docs" / "dataframes.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| ([^|]*)\| ([^|]*)\|", section, flags=re.M)
    documented = {(name, dtype, table) for name, dtype, s, f in rows
                  for table, mark in (("samples", s), ("fields", f)) if mark.strip()}
    expected = {(name, dtype, table) for table, mapping in COLUMNS.items() for name, dtype in mapping.items()}
    assert documented == expected


def test_one_row_per_generation_and_per_field(tmp_path: Path, report) -> None:  # type: ignore[no-untyped-def]
    base = report.baseline
    missing = base.items[0].id
    dirs = _store(tmp_path, _without_first(base), report.candidates[0].run)
    samples, fields = evalrun.samples_df(dirs, log=None), evalrun.fields_df(dirs, log=None)
    n_items = len(base.items)
    assert len(samples) == 2 * n_items - 1 and missing not in set(samples[samples.run == "baseline"].item)
    assert not samples.duplicated(["run", "item"]).any()
    assert len(fields) == 2 * sum(len(it.fields) for it in base.items) - len(base.items[0].fields)
    assert not fields.duplicated(["run", "item", "field"]).any()
    assert list(samples.item[:3]) == [it.id for it in base.items[1:4]]  # the run's item order
    assert set(fields.config) == {"baseline", "int4kv"} and set(samples.run) == {"baseline", "int4kv"}


def test_flip_filter_is_the_comparisons_harmful_and_helpful(stored: list[Path], report) -> None:  # type: ignore[no-untyped-def]
    df = evalrun.fields_df(stored, baseline=stored[0], log=None)
    for run, comparison in ((c.run, c.comparison) for c in report.candidates):
        mine = df[df.config == run.name]
        harmful = mine[mine.flip == "harmful"]
        assert set(zip(harmful.item, harmful.field)) == {f.key for f in comparison.harmful}
        assert len(harmful) == len(comparison.harmful)
        helpful = mine[mine.flip == "helpful"]
        assert set(zip(helpful.item, helpful.field)) == {f.key for f in comparison.helpful}
        assert set(mine.flip) <= {"harmful", "helpful", ""} and not mine.flip.isna().any()
    assert (df[df.config == "baseline"].flip == "").all()  # against itself nothing flips
    assert len(report.comparisons[0].harmful) > 0


def test_without_a_baseline_flip_is_there_and_na(stored: list[Path]) -> None:
    df = evalrun.fields_df(stored, log=None)
    assert df.flip.isna().all() and df.flip.dtype == pd.array([], dtype="string").dtype


def test_a_field_the_baseline_did_not_answer_has_no_flip(tmp_path: Path, report) -> None:  # type: ignore[no-untyped-def]
    base = report.baseline
    gone = base.items[0].id
    dirs = _store(tmp_path, _without_first(base), report.candidates[0].run)
    df = evalrun.fields_df(dirs[1:], baseline=dirs[0], log=None)
    assert df[df.item == gone].flip.isna().all() and not df[df.item != gone].flip.isna().any()


def test_fields_carry_the_scorers_outcome_and_normalised_prediction(stored: list[Path], report) -> None:  # type: ignore[no-untyped-def]
    df = evalrun.fields_df(stored[1:2], log=None).set_index(["item", "field"])
    for s in report.scored["int4kv"]:
        for name, score in s.fields.items():
            row = {k: None if pd.isna(v) else v for k, v in df.loc[(s.item_id, name)].items()}
            assert (row["outcome"], row["type"], row["gold"]) == (score.outcome, s.kinds[name], s.golds[name])
            assert (row["prediction"], row["subcode"]) == (score.pred_norm, score.subcode)
            assert row["correct"] == s.field_right(name)


def test_timings_are_the_latency_definitions_and_labels_the_methods(stored: list[Path], report) -> None:  # type: ignore[no-untyped-def]
    df = evalrun.samples_df(stored, log=None)
    run = report.candidates[0].run
    mine = df[df.config == run.name].set_index("item")
    for item_id, gen in run.generations.items():
        row = mine.loc[item_id]
        assert row.ttft == latency.ttft(gen) and row.tpot == latency.tpot(gen) and row.e2el == latency.e2el(gen)
        assert (row.prompt_tokens, row.new_tokens, row.batch_size, row.seconds) == (
            gen.prompt_tokens, gen.new_tokens, gen.batch_size, gen.seconds)
        assert row.output == gen.output and row.prompt_hash == gen.prompt_hash
    labels = df.drop_duplicates("config").set_index("config").acceleration
    assert labels["baseline"] == "none" and labels["int4kv"] == "kv_cache (int4kv quanto)"


def test_an_error_generation_has_its_error_and_no_timings(tmp_path: Path, report) -> None:  # type: ignore[no-untyped-def]
    cand = report.candidates[0].run
    item = cand.items[0]
    failed = cand.generations[item.id].model_copy(update={"output": None, "error": "CUDA error: out of memory"})
    dirs = _store(tmp_path, _with_outputs(cand, {item.id: failed}))
    sample = evalrun.samples_df(dirs, log=None).set_index("item").loc[item.id]
    assert sample.error == "CUDA error: out of memory" and pd.isna(sample.output)
    assert pd.isna(sample.ttft) and pd.isna(sample.tpot) and pd.isna(sample.e2el)
    field = evalrun.fields_df(dirs, log=None).set_index("item").loc[item.id]
    assert field.outcome == "error" and field.error == "CUDA error: out of memory" and not field.correct
    assert pd.isna(field.ttft) and pd.isna(field.tpot)


def _hostile_dirs(root: Path, report) -> list[Path]:  # type: ignore[no-untyped-def]
    cand = report.candidates[0].run
    outputs = {it.id: cand.generations[it.id].model_copy(update={"output": text})
               for it, text in zip(cand.items, HOSTILE)}
    return _store(root, report.baseline, _with_outputs(cand, outputs))


@pytest.mark.parametrize("table", ["samples", "fields"])
def test_hostile_text_round_trips_byte_exact_in_parquet_and_csv(tmp_path: Path, report, table: str) -> None:  # type: ignore[no-untyped-def]
    dirs = _hostile_dirs(tmp_path / "runs", report)
    df = evalrun.samples_df(dirs, log=None) if table == "samples" else evalrun.fields_df(dirs, baseline=dirs[0], log=None)
    back = pq.read_table(io.BytesIO(frame_bytes(df, "parquet"))).to_pandas()
    assert list(back.dtypes) == list(df.dtypes) and back.equals(df)
    path = tmp_path / "t.csv"
    path.write_bytes(frame_bytes(df, "csv"))
    csv = read_csv(path, table)  # type: ignore[arg-type]
    assert list(csv.dtypes) == list(df.dtypes)
    # CSV has no null: an empty string reads back as NA; everything else is exact
    assert csv.equals(df.replace({"": pd.NA}))
    if table == "samples":
        assert [o for o in csv.output if o in HOSTILE] == HOSTILE
        assert "=cmd|' /C calc'!A0" in path.read_text(encoding="utf-8")  # as stored: no prefix added


def test_a_lone_surrogate_is_refused_naming_the_item(tmp_path: Path, report) -> None:  # type: ignore[no-untyped-def]
    cand = report.candidates[0].run
    item = cand.items[2]
    odd = cand.generations[item.id].model_copy(update={"output": "half a pair \ud800 here"})
    dirs = _store(tmp_path, _with_outputs(cand, {item.id: odd}))
    with pytest.raises(RunFailed, match=re.escape(f"item {item.id!r}: its output holds a lone surrogate")):
        evalrun.samples_df(dirs, log=None)


def _fingerprint(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_reading_never_writes_to_a_run(stored: list[Path]) -> None:
    root = stored[0].parent
    before = _fingerprint(root)
    evalrun.samples_df(stored, log=None)
    evalrun.fields_df(stored, baseline=stored[0], log=None)
    assert _fingerprint(root) == before


def test_an_unreadable_run_fails_closed_naming_the_file(tmp_path: Path, stored: list[Path]) -> None:
    nowhere = tmp_path / "no-such-run"
    for build in (evalrun.samples_df, evalrun.fields_df):
        with pytest.raises(ConfigError, match=re.escape(f"{nowhere}: not a run directory")):
            build([stored[0], nowhere], log=None)
    with pytest.raises(ConfigError, match=re.escape(f"{nowhere}: not a run directory")):
        evalrun.fields_df(stored[:1], baseline=nowhere, log=None)
    (stored[1] / "manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(str(stored[1] / "manifest.json"))) as exc:
        evalrun.samples_df(stored, log=None)
    assert "\n" not in str(exc.value)


def test_edited_gold_is_refused_unless_trusted(stored: list[Path], report) -> None:  # type: ignore[no-untyped-def]
    items = stored[0] / "items.jsonl"
    manifest = json.loads((stored[0] / "manifest.json").read_text(encoding="utf-8"))
    manifest["items_sha256"] = hashlib.sha256(b"what it was asked").hexdigest()
    (stored[0] / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(f"{items}: items.jsonl was changed after the run")):
        evalrun.fields_df(stored[:1], log=None)
    warnings: list[str] = []
    assert len(evalrun.fields_df(stored[:1], trust_edited_items=True, log=warnings.append)) > 0
    assert any("scoring it anyway" in w for w in warnings)


def test_samples_read_items_by_their_hash_only_when_it_vouches_for_every_line(stored: list[Path]) -> None:
    from evalrun.evals.store import RunStore, items_sha256

    store = RunStore(stored[1])
    manifest = store.read_manifest() | {"items_sha256": items_sha256(store.read_items())}  # as `execute` records it
    store.write_manifest(manifest)
    rows = store.vouched_item_rows(manifest)
    full = RunResult.load(stored[1])
    assert rows is not None and [(r["id"], r["pack"], len(r["fields"])) for r in rows] == \
        [(it.id, it.pack, len(it.fields)) for it in full.items]
    df = evalrun.samples_df(stored[1:2], log=None)
    assert list(df["item"]) == [it.id for it in full.items if it.id in full.generations]
    assert list(df["fields"]) == [len(it.fields) for it in full.items if it.id in full.generations]
    items = stored[1] / "items.jsonl"
    lines = items.read_bytes().splitlines(keepends=True)
    for damaged in (lines + lines[:1],                      # an id seen twice
                    lines + [lines[0][:-8]],                # a torn last line
                    [lines[0].replace(b'"gold":"', b'"gold":"9')] + lines[1:]):  # an edited gold
        items.write_bytes(b"".join(damaged))
        assert store.vouched_item_rows(manifest) is None  # read and checked the full way instead
    assert store.vouched_item_rows({}) is None  # no recorded hash: nothing vouches
    with pytest.raises(ConfigError, match="items.jsonl was changed after the run"):
        evalrun.samples_df(stored[1:2], log=None)


def test_samples_df_reads_items_by_their_hash_without_building_them_and_gives_the_checked_frame(
        stored: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """With the recorded hash vouching for items.jsonl, samples_df validates no Item (the cost it saves),
    and its table is the one the full, checked reading gives; without a hash every item is built."""
    from evalrun.contract.types import Item
    from evalrun.evals.store import RunStore, items_sha256

    store = RunStore(stored[1])
    manifest = store.read_manifest()
    without_hash = {k: v for k, v in manifest.items() if k != "items_sha256"}
    built: list[str] = []
    real = Item.model_validate.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Item, "model_validate", classmethod(lambda cls, data, **kw: built.append("item") or
                                                            real(cls, data, **kw)))

    store.write_manifest(without_hash)
    n = len(RunResult.load(stored[1]).items)
    built.clear()
    checked = evalrun.samples_df(stored[1:2], log=None)
    assert len(built) == n > 0  # no hash: every line read and validated in full
    store.write_manifest(manifest | {"items_sha256": items_sha256(store.read_items())})
    built.clear()
    vouched = evalrun.samples_df(stored[1:2], log=None)
    assert built == [], "no Item is built when the hash vouches for every line"
    pd.testing.assert_frame_equal(vouched, checked)
