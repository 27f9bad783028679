"""Sweeps: one candidate per knob value, each its own run, and a knob-vs-accuracy table."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from evalrun.evals.files import ConfigError
from evalrun.evals.config import parse_set, sweep_points
from tests.conftest import run_cli


def _base(tmp_path: Path, model_dir: Path) -> Path:
    cfg = {"name": "tiny", "model": str(model_dir), "generation": {"max_new_tokens": 6},
           "tasks": [{"pack": "needle_numbers", "lengths": [128], "depths": [0.0, 1.0], "values": ["integer"]}]}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_parse_set_reads_yaml_values() -> None:
    assert parse_set("acceleration.kv_cache.quant=int2,int4") == ("acceleration.kv_cache.quant", ["int2", "int4"])
    assert parse_set("generation.max_new_tokens=8,16") == ("generation.max_new_tokens", [8, 16])
    with pytest.raises(ConfigError, match="expected KEY.PATH"):
        parse_set("acceleration.kv_cache.quant")


def test_points_are_validated_and_named(tmp_path: Path) -> None:
    base = tmp_path / "b.yaml"
    base.write_text("name: b\ntasks: [{pack: needle_numbers}]\n")
    cfg, points = sweep_points(base, ["acceleration.kv_cache.backend=simulated", "acceleration.kv_cache.quant=int2,int3"])
    assert cfg.name == "b"
    assert [p.config.name for p in points] == ["b-backend-simulated-quant-int2", "b-backend-simulated-quant-int3"]
    assert points[1].config.acceleration["kv_cache"].quant == "int3"
    with pytest.raises(ConfigError, match="not supported by backend hqq"):
        sweep_points(base, ["acceleration.kv_cache.quant=int5"])


@pytest.mark.slow
def test_sweep_runs_each_point_and_prints_the_knob_table(tmp_path: Path, tiny_model_dir: Path) -> None:
    base = _base(tmp_path, tiny_model_dir)
    out = tmp_path / "runs"
    res = run_cli("sweep", str(base), "--set", "acceleration.kv_cache.backend=simulated",
                  "--set", "acceleration.kv_cache.quant=int2,int8", "--out", str(out))
    assert res.returncode in (0, 1, 4), res.stdout + res.stderr
    assert "accuracy and speed against the knob" in res.stdout
    assert "int2" in res.stdout and "int8" in res.stdout
    runs = sorted(p.name.rsplit("-", 1)[0] for p in out.iterdir())
    assert runs == ["tiny", "tiny-backend-simulated-quant-int2", "tiny-backend-simulated-quant-int8"]


@pytest.mark.slow
def test_bad_set_exits_2(tmp_path: Path, tiny_model_dir: Path) -> None:
    res = run_cli("sweep", str(_base(tmp_path, tiny_model_dir)), "--set", "acceleration.kv_cache.quant",
                  "--out", str(tmp_path / "runs"))
    assert res.returncode == 2 and "expected KEY.PATH" in res.stderr
