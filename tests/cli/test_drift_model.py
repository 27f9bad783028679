"""Drift on the real default model (SmolLM2-135M, CPU, fp32), one short needle: the 4-bit KV cache
moves the distribution more than the A/A repeat does, and the CLI reports it beside the flips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli, write_config

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_int4kv_drifts_more_than_the_aa_repeat(tmp_path: Path) -> None:
    base = write_config(tmp_path / "base.yaml", """
        name: base
        model: smollm2-135m
        batch_size: 1
        generation: {max_new_tokens: 8}
        tasks:
          - {pack: needle_numbers, lengths: [320], depths: [0.5], values: [integer]}
        """)
    cand = write_config(tmp_path / "int4.yaml", """
        extends: base.yaml
        name: int4kv
        acceleration:
          kv_cache: {quant: int4, backend: hqq, axis_key: 1, axis_value: 1, group_size: 32, residual_length: 16}
        """)
    res = run_cli("compare", str(base), str(cand), "--drift", "--replicates", "2", "--out", str(tmp_path / "runs"),
                  "--json", str(tmp_path / "r.json"), "--markdown", str(tmp_path / "r.md"))
    assert "Traceback" not in res.stderr, res.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    int4 = report["comparisons"][0]["drift"]["overall"]
    aa = report["noise_floor"]["drift"]["overall"]
    assert int4["tokens"] >= 1 and aa["tokens"] == int4["tokens"]
    assert int4["mean_kl"]["value"] > aa["mean_kl"]["high"]
    assert int4["max_kl"] > aa["max_kl"]
    assert "Drift of int4kv on the baseline's answers" in (tmp_path / "r.md").read_text(encoding="utf-8")
