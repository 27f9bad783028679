"""End to end on the real default model (SmolLM2-135M, CPU): the 4-bit KV cache
keeps the needles, the 2-bit one loses them, and a stored baseline is reused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CONFIGS, ModelRuns, run_cli

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, model_runs: ModelRuns) -> Path:
    """The run store of this module: the baseline (--limit 4) from the session's shared runs."""
    out = tmp_path_factory.mktemp("runs")
    model_runs.copy(out, CONFIGS / "baseline.yaml", limit=4)
    return out


def test_int4kv_keeps_the_needles_and_says_what_it_could_not_test(runs: Path) -> None:
    """With --limit 4 the 135M baseline finds every needle but answers none of the first four
    document fields: the needle rules pass, the document rules cannot fail, and that is exit 4
    (never a green light for what could not be tested), not a pass."""
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int4kv.yaml"), "--limit", "4",
                  "--out", str(runs))
    assert res.returncode == 4, res.stdout + res.stderr
    assert "int4kv: INCOMPLETE" in res.stdout and "not testable here (baseline 0 of" in res.stdout
    assert "failed" not in res.stdout.split("int4kv: INCOMPLETE", 1)[1].split("\n", 1)[0]
    assert "no rule here could fail" in res.stdout
    assert "Traceback" not in res.stderr
    assert "Speed vs accuracy" in res.stdout and "prefill included" in res.stdout  # what `make demo` prints
    assert "Definitions (vLLM bench serve)" in res.stdout


def test_int2kv_fails_listing_flips_and_reuses_the_baseline(runs: Path) -> None:
    # every item (--no-early-stop): the test reads every flip; tests/cli/test_early_stop.py covers the stop
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int2kv.yaml"), "--limit", "4",
                  "--out", str(runs), "--no-early-stop")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "baseline: reusing stored run" in res.stderr
    assert "int2kv: FAIL" in res.stdout
    assert "Harmful flips" in res.stdout and "needle_numbers/L512-D0.00-integer" in res.stdout


def test_manifests_prove_the_kv_cache_was_quantized(runs: Path) -> None:
    manifests = {json.loads(p.read_text())["name"]: json.loads(p.read_text()) for p in runs.glob("*/manifest.json")}
    assert set(manifests) == {"baseline", "int4kv", "int2kv"}
    assert manifests["baseline"]["effects"] == {}
    int4 = manifests["int4kv"]["effects"]["kv_cache"]
    int2 = manifests["int2kv"]["effects"]["kv_cache"]
    assert int4["quant"] == "int4" and int2["quant"] == "int2"
    assert int4["backend"] == int2["backend"] == "hqq"  # the demo's candidates are on the default backend
    # hqq packs int2 only in groups of 16 on this model (int4: 32), whose fp32 scale and zero cost what the
    # halved codes save: both store under a quarter of the full-precision bytes, int2 no less than int4
    assert 0 < int4["kv_bytes_ratio"] < 0.25 and 0 < int2["kv_bytes_ratio"] < 0.25
    for m in manifests.values():
        assert m["model"]["identity"]["gguf_sha256"]
        assert m["status"] == "complete" and m["items_total"] == 8  # --limit 4 of each of the two packs
        assert {"python", "torch", "transformers", "evalrun"} <= set(m["versions"])
    for m in manifests.values():  # speed figures beside the accuracy, per run
        sp = m["speed"]
        assert sp["items_timed"] == 8 and 0 < sp["ttft"]["p50"] <= sp["ttft"]["p95"] <= sp["ttft"]["p99"]
        assert sp["tpot"]["p50"] > 0 and sp["itl"]["n"] > 0 and sp["e2el"]["p50"] > sp["ttft"]["p50"]
        assert sp["request_throughput"] > 0 and sp["peak_memory"]["bytes"] > 0
        assert "perf_counter" in sp["clock"] and sp["schema"] == 3
    # SmolLM2-135M in float32: 2 x 30 layers x 3 KV heads x 64 dims x 4 bytes; quantized caches store less
    assert manifests["baseline"]["speed"]["kv_cache"]["bytes_per_token"] == 46080
    assert manifests["int2kv"]["speed"]["kv_cache"]["bytes_per_token"] < 46080 / 4
    assert manifests["int4kv"]["speed"]["kv_cache"]["bytes_per_token"] < 46080 / 4
    keys = {m["key"] for m in manifests.values()}
    assert len(keys) == 3, "configs differing only in acceleration must never share a key"


def test_ci_artefacts_show_the_failing_rules(runs: Path, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    junit, md, js = tmp_path / "j.xml", tmp_path / "s.md", tmp_path / "c.json"
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int2kv.yaml"), "--limit", "4",
                  "--out", str(runs), "--junit", str(junit), "--markdown", str(md), "--json", str(js),
                  env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert res.returncode == 1, res.stderr
    root = ET.parse(junit).getroot()
    failed = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    assert "max_drop" in failed and "max_harmful_flips[number]" in failed
    text = md.read_text()
    assert "❌ FAIL" in text and "max_harmful_flips[number]" in text and "Top harmful flips" in text
    assert "### Speed vs accuracy" in text and "prefill included" in text and "TPOT" in text
    assert summary.read_text().startswith("earlier step\n") and "❌ FAIL" in summary.read_text()
    data = json.loads(js.read_text())
    assert data["passed"] is False
    pack = next(p for p in data["comparisons"][0]["packs"] if p["pack"] == "needle_numbers")
    assert pack["statistics"]["discordant_baseline_only"] == 4 and pack["harmful_items"] == 4
    assert [r["run"] for r in data["speed"]["rows"]] == ["baseline", "int2kv"]


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
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int4kv.yaml"), "--limit", "4",
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


def test_doc_fields_int2kv_flips_amount_fields(tmp_path: Path, cfg_file) -> None:
    """Issue 3's promise on the real model: a dropped or altered amount is caught field by field."""
    base = cfg_file("docs-base.yaml", """
        name: docs-base
        model: smollm2-135m
        generation: {max_new_tokens: 32}
        tasks:
          - pack: doc_fields
            documents: 2
            lengths: [600]
            fields: [total, subtotal, tax, monthly_fee, revenue]
        """)
    cand = cfg_file("docs-int2.yaml", """
        extends: docs-base.yaml
        name: docs-int2
        acceleration: {kv_cache: {quant: int2}}
        """)
    js = tmp_path / "c.json"
    res = run_cli("compare", str(base), str(cand), "--out", str(tmp_path / "runs"), "--json", str(js),
                  "--no-early-stop")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "docs-int2 vs docs-base: fields" in res.stdout, "the per-field table must be shown"
    data = json.loads(js.read_text())["comparisons"][0]
    (pack,) = data["packs"]
    # measured: 1 of the 5 fields of the invoice and the contract (the contract's monthly fee), which int2kv flips
    assert pack["baseline_accuracy"] >= 0.2, "the 135M baseline must answer some amounts for this to mean anything"
    amount_flips = [f for f in data["harmful_flips"] if f["type"] == "amount"]
    assert amount_flips, data["harmful_flips"]
    assert any(r["rule"] == "max_harmful_flips[amount]" and not r["passed"] for r in data["rules"])
    for f in amount_flips:
        assert f["item_id"] in res.stdout  # each flip is listed
