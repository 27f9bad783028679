"""Interleaved timing on the tiny model: a sample of batches of the baseline and the candidate
re-timed side by side (the order alternating), stored apart from the samples, used by the
speedups and the speed rules, and reused when both runs are stored and were re-timed already."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from evalrun.contract.types import Item, ItemMeta
from evalrun.evals import api
from evalrun.evals.config import parse_config
from evalrun.evals.speed import interleaved_of, sample_batches, speed_table
from evalrun.evals.store import RunStore
from evalrun.evals.timing import load as speed_load
from evalrun.reports.text import units
from evalrun.runners.batch_plan import plan_batches
from tests.conftest import tiny_config

SHAPES = [{"name": "s", "input_tokens": 48, "output_tokens": 6}]


def _configs(model_dir: Path, tmp: Path, gate: dict | None = None, timing: str = "auto"):  # type: ignore[no-untyped-def]
    base = tiny_config(model_dir, batch_size=2, tasks=[{"pack": "latency", "shapes": SHAPES, "count": 8}])
    cand = {**base, "name": "cand", "timing": timing, "timing_batches": 3,
            "acceleration": {"kv_cache": {"quant": "int4", "backend": "quanto", "group_size": 16, "residual_length": 4}}}
    if gate:
        cand["gate"] = gate
    return parse_config(base, file=tmp / "b.yaml"), parse_config(cand, file=tmp / "c.yaml")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sample_batches_are_the_runners_batches_evenly_spaced() -> None:
    items = [Item(id=f"i{k}", pack="p", prompt="x" * k, fields=[], meta=ItemMeta(context_tokens=100 - k))
             for k in range(10)]
    tokens = lambda it: it.meta.context_tokens  # noqa: E731
    chunks = sample_batches(items, 2, 3, tokens)
    # the runner's plan: by tokens (not characters), longest first
    assert [[it.id for it in c] for c in chunks] == [["i0", "i1"], ["i2", "i3"], ["i6", "i7"]]
    assert all(c in plan_batches(items, tokens, 2) for c in chunks)
    assert len(sample_batches(items, 4, 8, tokens)) == 3  # fewer batches than asked: all of them


@pytest.mark.slow
def test_speed_rules_time_the_candidate_interleaved_and_never_touch_the_samples(tiny_model_dir: Path,
                                                                                tmp_path: Path) -> None:
    gate = {"speed": [{"max_regression": {"metric": "tpot_p50", "value": 100.0}}]}
    base, cand = _configs(tiny_model_dir, tmp_path, gate)
    logs: list[str] = []
    report = api.compare(base, [cand], out=tmp_path / "runs", log=logs.append)
    run = report.candidates[0].run
    store = RunStore(run.dir)
    records = store.read_interleaved(report.baseline.manifest.key or "")
    assert {r.pair for r in records} == {0, 1, 2}
    # each pair: both sides, each batch of 2 items; the order alternates (baseline first in pairs 0 and 2)
    firsts = {(r.pair, r.side) for r in records if r.first}
    assert firsts == {(0, "baseline"), (1, "candidate"), (2, "baseline")}
    assert len(records) == 3 * 2 * 2
    # the window's load on every line; a busy window (a loaded machine) is warned of and not vouched for
    assert records[0].machine is not None and all(r.machine == records[0].machine for r in records)
    busy = speed_load.busy(speed_load.window_load(records[0].machine))
    table = speed_table(report)
    row = table.rows[1]
    assert row.speedup_basis == "interleaved re-timing (3 batch pairs, A B A B)"
    # labelled where it is shown: beside every speedup, and in the note under the table
    assert row.timing == "interleaved" and (row.timing_warning is not None) == busy
    assert units.speedup_cell(row, "tpot_p50").endswith("] interleaved" + (" ⚠" if busy else ""))
    assert f"cand: {'WARNING: ' * busy}speedups from interleaved re-timing (3 batch pairs, A B A B)" in table.spread_note
    assert row.speedups["tpot_p50"].n == 6 and row.speedups["tpot_p50"].basis == row.speedup_basis
    [rule] = [r for r in report.verdicts[0].rules if r.rule.startswith("max_regression")]
    assert rule.evaluated != busy and "interleaved re-timing" in rule.detail
    assert any("interleaved timing against" in m for m in logs)
    samples = {p: _digest(p) for p in (report.baseline.dir / "samples.jsonl", run.dir / "samples.jsonl")}
    # a second compare: both runs stored and already re-timed side by side: nothing is timed again,
    # unless that was on a busy machine
    logs.clear()
    again = api.compare(base, [cand], out=tmp_path / "runs", log=logs.append)
    said = "its stored interleaved timing was on a busy machine" if busy else "reusing its interleaved timing"
    assert any(said in m for m in logs), logs
    assert len(RunStore(again.candidates[0].run.dir).read_interleaved(report.baseline.manifest.key or "")) == 12 * (1 + busy)
    assert {p: _digest(p) for p in samples} == samples, "stored generations are never rewritten"
    # the re-timings come back from disk for `evalrun report` too
    stored = api.report([report.baseline.dir, run.dir], log=lambda _m: None)
    assert stored.candidates[0].run.interleaved is not None
    assert interleaved_of(records, "another baseline") is None


@pytest.mark.slow
def test_sequential_timing_uses_each_runs_own(tiny_model_dir: Path, tmp_path: Path) -> None:
    base, cand = _configs(tiny_model_dir, tmp_path, timing="sequential",
                          gate={"speed": [{"max_regression": {"metric": "tpot_p50", "value": 100.0}}]})
    report = api.compare(base, [cand], out=tmp_path / "runs", log=lambda _m: None)
    assert not RunStore(report.candidates[0].run.dir).interleaved_path.exists()
    row = speed_table(report).rows[1]
    assert row.speedup_basis == "stored runs" and row.timing == "sequential"
    assert "sequential" in units.speedup_cell(row, "tpot_p50")
