"""`evalrun compare baseline int4kv --ray` on the real default model: the verdict and every stored
output are the in-process run's (the same batches on other processes), and the manifests say where
each item was generated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CONFIGS, ModelRuns, run_cli

pytestmark = [pytest.mark.model, pytest.mark.slow]


def _outputs(out: Path) -> dict[str, dict[str, tuple]]:
    runs = {}
    for run_dir in sorted(out.iterdir()):
        if not (run_dir / "samples.jsonl").exists():
            continue
        lines = [json.loads(ln) for ln in (run_dir / "samples.jsonl").read_text().splitlines() if ln.strip()]
        runs[run_dir.name] = {ln["item_id"]: (ln["output"], ln["output_ids"], ln["batch_size"]) for ln in lines}
    return runs


def _verdict(stdout: str) -> str:
    return next(ln for ln in stdout.splitlines() if ln.startswith("verdict:")).rsplit("(", 1)[0]


def test_compare_on_ray_gives_the_in_process_verdict_and_outputs(tmp_path: Path, model_runs: ModelRuns) -> None:
    args = ["compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int4kv.yaml"), "--limit", "1",
            "--no-early-stop"]
    # the in-process baseline is the session's (generated in process, in the same batches); on Ray, every run
    model_runs.copy(tmp_path / "inprocess", CONFIGS / "baseline.yaml", limit=1)
    here = run_cli(*args, "--out", str(tmp_path / "inprocess"))
    there = run_cli(*args, "--out", str(tmp_path / "ray"), "--ray", fresh_process=True)  # Ray in its own process
    assert there.returncode == here.returncode, there.stdout + there.stderr
    assert _verdict(there.stdout) == _verdict(here.stdout)
    mine, theirs = _outputs(tmp_path / "inprocess"), _outputs(tmp_path / "ray")
    assert sorted(mine) == sorted(theirs) and len(mine) == 2  # same run keys, so the same directory names
    for name, outputs in mine.items():
        assert theirs[name] == outputs, name
        manifest = json.loads((tmp_path / "ray" / name / "manifest.json").read_text())
        produced = sorted(i for a in manifest["executor"]["actors"] for i in a["item_ids"])
        assert produced == sorted(outputs)
        assert "executor" not in json.loads((tmp_path / "inprocess" / name / "manifest.json").read_text())
