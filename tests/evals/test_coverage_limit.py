"""`--limit` in the run manifest (schema 3): the limit the stored items are cut to, kept through
resumes and cleared once the whole plan is stored; older manifests without it still load.
Real runs of the tiny random model (six needle items)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrun.contract.manifest import SCHEMA_VERSION, RunManifest
from evalrun.evals import api
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.evals.results import RunResult
from tests.conftest import tiny_config


def _manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


@pytest.mark.slow
def test_the_limit_is_recorded_kept_and_cleared(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = parse_config(tiny_config(tiny_model_dir))
    quiet = lambda _m: None  # noqa: E731
    one = execute(prepare(cfg, tmp_path, limit=1), log=quiet)
    assert one.limit == 1 and len(one.items) == 1
    written = _manifest(one.dir)
    assert written["limit"] == 1 and written["schema_version"] == SCHEMA_VERSION == 3
    assert RunResult.load(one.dir).limit == 1, "read back from the manifest"

    two = execute(prepare(cfg, tmp_path, limit=2), log=quiet)  # a larger limit extends the items
    assert _manifest(two.dir)["limit"] == 2 and len(RunResult.load(two.dir).items) == 2

    full = execute(prepare(cfg, tmp_path), log=quiet)  # the whole plan: no longer limited
    assert full.limit is None and _manifest(full.dir)["limit"] is None
    assert RunResult.load(full.dir).limit is None and len(RunResult.load(full.dir).items) == 6

    again = execute(prepare(cfg, tmp_path, limit=1), log=quiet)  # reused: this command asked one item
    assert again.reused and again.limit == 1 and len(again.items) == 1
    assert _manifest(again.dir)["limit"] is None, "the directory still holds the whole plan"


@pytest.mark.slow
def test_a_limited_run_compared_against_a_full_baseline_is_incomplete(tiny_model_dir: Path, tmp_path: Path) -> None:
    """The stored limit reaches the verdict through `report` (stored runs, no model)."""
    base_cfg = parse_config(tiny_config(tiny_model_dir, name="base"))
    cand_cfg = parse_config(tiny_config(tiny_model_dir, name="cand"))
    base = execute(prepare(base_cfg, tmp_path), log=lambda _m: None)
    cand = execute(prepare(cand_cfg, tmp_path, limit=2), log=lambda _m: None)
    stored = api.report([base.dir, cand.dir], log=lambda _m: None)
    [verdict] = stored.verdicts
    [gap] = [g for g in verdict.gaps if "--limit" in g.reason]
    assert gap.pack == "needle_numbers" and gap.items == 4
    assert f"cand {cand.dir} was stored with --limit 2" in gap.reason and "it lacks 4" in gap.reason
    assert verdict.status == "incomplete"


def test_a_manifest_written_before_the_limit_was_recorded_loads_unlimited() -> None:
    old = {"schema_version": 2, "name": "base", "key": "k" * 64, "status": "complete", "items_total": 6}
    m = RunManifest.model_validate(old)
    assert m.limit is None and "limit" not in m.to_dict() and m.schema_version == 2
