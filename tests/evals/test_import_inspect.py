"""`evalrun import inspect` on real Inspect AI eval logs (tests/data/inspect, made by the
commands in its README with the hf provider on the default model, fp32 and bf16): one
item per sample, each scorer's value as the outcome, the paired comparison. Needs
inspect-ai (the `inspect` extra, which `make test` installs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.evals import api
from evalrun.evals.files import ConfigError
from evalrun.evals.imports import import_runs, load_field_map, read_logs
from tests.conftest import ROOT

inspect_log = pytest.importorskip("inspect_ai.log")

DATA = ROOT / "tests" / "data" / "inspect"


def _log(dtype: str) -> Path:
    [path] = sorted((DATA / dtype).glob("*.eval"))
    return path


def test_a_real_inspect_log_becomes_one_item_per_sample_with_the_scorers_value() -> None:
    run = read_logs("inspect", [_log("float32")])
    log = inspect_log.read_eval_log(str(_log("float32")))
    assert len(run.items) == len(log.samples) and {it.pack for it in run.items} == {"arith"}
    by_id = {g.item_id: g for g in run.generations}
    for sample in log.samples:
        gen = by_id[f"arith/{sample.id}"]
        assert gen.output == sample.output.completion
        assert gen.source_scores == {"match": sample.scores["match"].value}
    assert [f.name for f in run.items[0].fields] == ["match"]
    accuracy = log.results.scores[0].metrics["accuracy"].value
    assert run.source["source_results"]["arith"]["match"]["accuracy"] == accuracy
    assert run.facts["runner"] == "inspect" and run.facts["versions"]["inspect_ai"]


def test_paired_comparison_of_two_inspect_logs_counts_the_scorers_flips(tmp_path: Path) -> None:
    base, cand = (import_runs("inspect", [_log(d)], name=d, out=tmp_path, log=lambda m: None)[0]
                  for d in ("float32", "bfloat16"))
    report = api.report([base.dir, cand.dir], log=lambda m: None)
    [pc] = report.comparisons[0].packs
    a = {s.id: s.scores["match"].value for s in inspect_log.read_eval_log(str(_log("float32"))).samples}
    b = {s.id: s.scores["match"].value for s in inspect_log.read_eval_log(str(_log("bfloat16"))).samples}
    assert pc.n == len(a)
    assert len(pc.harmful) == sum(1 for k in a if a[k] == "C" and b[k] != "C")
    assert len(pc.helpful) == sum(1 for k in a if a[k] != "C" and b[k] == "C")
    assert pc.baseline_accuracy == pytest.approx(sum(v == "C" for v in a.values()) / len(a))
    again = import_runs("inspect", [_log("float32")], name="float32", out=tmp_path, log=lambda m: None)[0]
    assert again.reused and again.dir == base.dir


def test_a_typed_mapping_and_foreign_or_duplicate_logs(tmp_path: Path) -> None:
    run = read_logs("inspect", [_log("float32")], load_field_map(pairs=["arith=number"]))
    assert [(f.name, f.kind) for f in run.items[0].fields] == [("answer", "number")]
    bad = tmp_path / "x.eval"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ConfigError, match="not a readable Inspect eval log"):
        read_logs("inspect", [bad])
    with pytest.raises(ConfigError, match="two logs of task 'arith'"):
        read_logs("inspect", [_log("float32"), _log("bfloat16")])
