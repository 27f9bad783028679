"""End to end on the real default model (SmolLM2-135M, CPU): the 4-bit KV cache
keeps the needles, the 2-bit one loses them, and a stored baseline is reused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CONFIGS, run_cli

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


def test_int4kv_passes(runs: Path) -> None:
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int4kv.yaml"), "--limit", "4",
                  "--out", str(runs))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "int4kv: PASS" in res.stdout
    assert "Traceback" not in res.stderr


def test_int2kv_fails_listing_flips_and_reuses_the_baseline(runs: Path) -> None:
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int2kv.yaml"), "--limit", "4",
                  "--out", str(runs))
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
    assert 0 < int2["kv_bytes_ratio"] < int4["kv_bytes_ratio"] < 0.5
    for m in manifests.values():
        assert m["model"]["identity"]["gguf_sha256"]
        assert m["status"] == "complete" and m["items_total"] == 4
        assert {"python", "torch", "transformers", "evalrun"} <= set(m["versions"])
    keys = {m["key"] for m in manifests.values()}
    assert len(keys) == 3, "configs differing only in acceleration must never share a key"
