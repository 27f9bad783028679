"""`evalrun calibrate` on the real llama.cpp server (built by `make engines-llamacpp`): three repeats of the
shipped f16 config on four items, the engine launched and stopped for each, and `compare` gating an A/A repeat
against the stored profile. What the figures are is the engine's (its greedy answers on one thread need not
move between restarts); the test holds what must be true whatever they are."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from evalrun.evals.calibrate import load_profile
from tests.conftest import run_cli
from tests.runners.test_server_lifecycle import _assert_none_left, _engine_config, needs_engine


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(1200)
@needs_engine
def test_calibrate_restarts_the_engine_for_each_repeat_and_compare_gates_against_the_profile(tmp_path: Path) -> None:
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    config = _engine_config(tmp_path, "llamacpp-f16.yaml", mark, tokens=32)  # the shipped budget
    done = run_cli("calibrate", str(config), "--repeats", "3", "--plants", "4", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    _assert_none_left(mark)
    runs = sorted(out.iterdir())
    assert len(runs) == 3
    launches = [json.loads((r / "manifest.json").read_text())["server"]["launched"] for r in runs]
    # restarted: each repeat launched its own server once, which logged into that repeat's run directory
    assert all(x["launches"] == 1 and Path(x["log"]).parent == r and Path(x["log"]).is_file()
               for x, r in zip(launches, runs))
    prof = load_profile(runs[0])
    assert prof is not None and prof.how == "its launched engine restarted for each repeat"
    assert prof.items == 4 and prof.with_profile.false_fail.n == prof.without_profile.false_fail.n == 3
    right = sum(s.flips.n for s in prof.scopes)
    assert right > 0 and sum(s.flips.k for s in prof.scopes) <= right
    assert all(0 <= m.detected.k <= m.detected.n == 3 * 4 for m in prof.power)
    assert {s.metric for s in prof.speed} >= {"ttft_p50", "tpot_p50"}
    print(" ".join(done.stdout.split()))

    report = tmp_path / "v.json"
    again = run_cli("compare", str(config), str(config), "--out", str(out), "--json", str(report))
    text = " ".join((again.stdout + again.stderr).split())
    assert again.returncode in (0, 1, 4) and "noise profile" in text and "3 repeats" in text, text
    verdict = json.loads(report.read_text())["verdicts"][0]
    # answers that did not move between restarts are gated one run against one (every flip counts)
    assert verdict["replicates"] == ([r.name for r in runs[1:]] if prof.replicates else [])
    assert prof.replicates == any(0 < u.right < prof.repeats for u in prof.unstable) or prof.without_profile.false_fail.k > prof.with_profile.false_fail.k
    _assert_none_left(mark)
