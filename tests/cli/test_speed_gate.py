"""Speed rules on the real default model (CPU): the 4-bit quanto KV cache is nowhere near 1.3x
faster here (at this short shape most of the cache is still in its full-precision residual), so a
`min_speedup` rule fails it with the measured interval in the message, timed interleaved (the
default with speed rules); the same candidate passes a lenient `max_regression`. On a loaded machine
evalrun itself says the re-timing window was busy: the rules are not vouched for (exit 4, the load
named), and the test skips with those figures, since the FAIL it checks needs a quiet machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import CONFIGS, run_cli

pytestmark = [pytest.mark.model, pytest.mark.slow]

TASKS = [{"pack": "latency", "shapes": [{"name": "short", "input_tokens": 128, "output_tokens": 16}], "count": 4}]


def _configs(tmp: Path) -> list[Path]:
    base = tmp / "latency.yaml"
    base.write_text(yaml.safe_dump({"extends": str(CONFIGS / "latency.yaml"), "tasks": TASKS}))
    cand = tmp / "latency-int4kv.yaml"
    cand.write_text(yaml.safe_dump({"extends": str(CONFIGS / "latency-int4kv.yaml"), "tasks": TASKS,
                                    "timing_batches": 4}))
    return [base, cand]


def test_a_slower_candidate_fails_min_speedup_with_its_interval(tmp_path: Path) -> None:
    gate = tmp_path / "gate.yaml"
    gate.write_text(yaml.safe_dump({"speed": [{"min_speedup": {"metric": "tpot_p50", "value": 1.3, "shape": "short"}},
                                              {"max_regression": {"metric": "e2el_p50", "value": 5.0}}]}))
    out, js, junit = tmp_path / "runs", tmp_path / "c.json", tmp_path / "junit.xml"
    res = run_cli("compare", *map(str, _configs(tmp_path)), "--gate", str(gate), "--out", str(out), "--json", str(js),
                  "--junit", str(junit), "--slo", "tpot=1s", "--html", str(tmp_path / "r.html"))
    data = json.loads(js.read_text())
    rules = {r["rule"]: r for v in data["verdicts"] for r in v["rules"]}
    speed_rule = rules["min_speedup[tpot_p50, shape short]"]
    if "busy machine" in speed_rule["detail"]:
        assert res.returncode == 4, res.stdout + res.stderr
        assert speed_rule["status"] == "incomplete" and "not vouched for" in speed_rule["detail"]
        assert "of the CPU time during the interleaved re-timing" in speed_rule["detail"]
        pytest.skip(f"the candidate was re-timed on a loaded machine: {speed_rule['detail']}")
    assert res.returncode == 1, res.stdout + res.stderr
    flat = res.stdout.replace("\n", " ")
    assert "latency-int4kv: FAIL" in flat and "min_speedup[tpot_p50, shape short]" in flat
    assert "interleaved timing against latency" in res.stderr
    assert speed_rule["passed"] is False and speed_rule["measured"] < 1.3
    assert "over 4 paired requests (interleaved re-timing (4 batch pairs, A B A B))" in speed_rule["detail"]
    assert "below 1.30x" in speed_rule["detail"] and "x [" in speed_rule["detail"]
    assert rules["max_regression[e2el_p50]"]["passed"] is True
    assert "min_speedup[tpot_p50, shape short]" in junit.read_text()
    # every figure of the speed section, per shape, with goodput under the SLO
    manifests = [json.loads(p.read_text()) for p in out.glob("*/manifest.json")]
    for m in manifests:
        [shape] = m["speed"]["shapes"]
        assert shape["shape"] == "short" and shape["tpot"]["p99"] > 0 and shape["itl"]["n"] == 4 * 15
    page = (tmp_path / "r.html").read_text()
    assert page.count("<svg") >= 2 and "TPOT (time per output token)" in page
