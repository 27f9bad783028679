"""End to end on the real default model (SmolLM2-135M, CPU): the 4-bit KV cache keeps the needles
and says what it could not test, its manifest proves the cache was quantized, an A/A repeat is
generated again. The 2-bit cache's FAIL, its flips and the CI artefacts are in
tests/cli/test_early_stop.py, on the same shared baseline (--limit 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CONFIGS, ModelRuns, run_cli

pytestmark = [pytest.mark.model, pytest.mark.slow]

LIMIT = 5  # tests/cli/test_early_stop.py's, so that the session generates this baseline once


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, model_runs: ModelRuns) -> Path:
    """The run store of this module: the baseline (--limit 5) from the session's shared runs."""
    out = tmp_path_factory.mktemp("runs")
    model_runs.copy(out, CONFIGS / "baseline.yaml", limit=LIMIT)
    return out


def test_int4kv_keeps_the_needles_and_says_what_it_could_not_test(runs: Path) -> None:
    """With --limit 5 the 135M baseline finds every needle but no date among the first five
    document fields (measured: one field right, the contract's monthly fee): every rule that can
    fail passes, the date rule cannot fail, and that is exit 4 (never a green light for what could
    not be tested), not a pass."""
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int4kv.yaml"), "--limit", str(LIMIT),
                  "--out", str(runs))
    assert res.returncode == 4, res.stdout + res.stderr
    assert "int4kv: INCOMPLETE" in res.stdout and "not testable here (baseline 0 of 1)" in res.stdout
    assert "failed" not in res.stdout.split("int4kv: INCOMPLETE", 1)[1].split("\n", 1)[0]
    assert "Traceback" not in res.stderr
    assert "Speed vs accuracy" in res.stdout and "prefill included" in res.stdout  # what `make demo` prints
    assert "Definitions (vLLM bench serve)" in res.stdout


def test_manifests_prove_the_kv_cache_was_quantized(runs: Path) -> None:
    manifests = {json.loads(p.read_text())["name"]: json.loads(p.read_text()) for p in runs.glob("*/manifest.json")}
    assert set(manifests) == {"baseline", "int4kv"}
    assert manifests["baseline"]["effects"] == {}
    int4 = manifests["int4kv"]["effects"]["kv_cache"]
    assert int4["quant"] == "int4" and int4["backend"] == "hqq"  # the demo's candidates are on the default backend
    assert 0 < int4["kv_bytes_ratio"] < 0.25  # int2kv's: tests/cli/test_early_stop.py
    for m in manifests.values():
        assert m["model"]["identity"]["gguf_sha256"]
        assert m["status"] == "complete" and m["items_total"] == 2 * LIMIT  # --limit 5 of each of the two packs
        assert {"python", "torch", "transformers", "evalrun"} <= set(m["versions"])
    for m in manifests.values():  # speed figures beside the accuracy, per run
        sp = m["speed"]
        assert sp["items_timed"] == 2 * LIMIT and 0 < sp["ttft"]["p50"] <= sp["ttft"]["p95"] <= sp["ttft"]["p99"]
        assert sp["tpot"]["p50"] > 0 and sp["itl"]["n"] > 0 and sp["e2el"]["p50"] > sp["ttft"]["p50"]
        assert sp["request_throughput"] > 0 and sp["peak_memory"]["bytes"] > 0
        assert "perf_counter" in sp["clock"] and sp["schema"] == 3
    # SmolLM2-135M in float32: 2 x 30 layers x 3 KV heads x 64 dims x 4 bytes; quantized caches store less
    assert manifests["baseline"]["speed"]["kv_cache"]["bytes_per_token"] == 46080
    assert manifests["int4kv"]["speed"]["kv_cache"]["bytes_per_token"] < 46080 / 4
    keys = {m["key"] for m in manifests.values()}
    assert len(keys) == 2, "configs differing only in acceleration must never share a key"


def test_a_a_comparison_generates_the_baseline_again_with_zero_flips(tmp_path: Path, model_runs: ModelRuns) -> None:
    runs = tmp_path / "runs"  # --limit 1 (the session's baseline): the repeat is generated, two items suffice
    model_runs.copy(runs, CONFIGS / "baseline.yaml", limit=1)
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "baseline.yaml"), "--limit", "1",
                  "--out", str(runs))
    assert res.returncode == 4, res.stdout + res.stderr  # nothing differs; the document rules could not fail
    assert "baseline~r1" in res.stdout
    assert list(runs.glob("baseline-*-r1/samples.jsonl")), "the repeat must be generated, not reused"
    assert "Harmful flips" not in res.stdout
    assert "100%" in res.stdout  # every output byte-identical


def test_bad_gate_file_exits_2(runs: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.yaml"
    gate.write_text("packs: {needle_numbers: {max_drop: lots}}\n")
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int4kv.yaml"), "--limit", str(LIMIT),
                  "--out", str(runs), "--gate", str(gate))
    assert res.returncode == 2 and "max_drop" in res.stderr and "Traceback" not in res.stderr


def test_a_model_that_cannot_load_exits_3(tmp_path: Path, cfg_file) -> None:
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "llama"}')
    cfg = cfg_file("broken.yaml", f"name: broken\nmodel: {broken}\ntasks: [{{pack: needle_numbers}}]\n")
    res = run_cli("run", str(cfg), "--out", str(tmp_path / "runs"))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "cannot load" in res.stderr and "Traceback" not in res.stderr
