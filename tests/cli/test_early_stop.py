"""Early stop and confirmation on the real model (fp32 on the CPU, deterministic): int2kv's FAIL
is decided after a few items; the full run (--no-early-stop, resuming the stopped one) fails the
same rules and more; its flips reproduce when re-asked, so confirmation keeps them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrun.evals.store import RunStore
from tests.conftest import CONFIGS, ModelRuns, run_cli

pytestmark = [pytest.mark.model, pytest.mark.slow]

# the fewest items that still stop early: 5 of each pack, 10 items in three batches, longest prompts
# first; the first batch holds contract-1's monthly fee, right at baseline and flipped by int2kv,
# which decides max_harmful_flips[amount] (--limit 4 puts every flip in the last batch: no stop)
ARGS = ("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int2kv.yaml"), "--limit", "5")


def _failing(data: dict) -> set[str]:
    return {f"{r['pack']}: {r['rule']}" for r in data["verdicts"][0]["rules"] if r["status"] == "fail"}


def _manifest(runs: Path, name: str) -> dict:
    return json.loads(next(runs.glob(f"{name}-*/manifest.json")).read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("early")


def test_a_decided_fail_stops_early_and_the_full_run_agrees(runs: Path, tmp_path: Path) -> None:
    early = run_cli(*ARGS, "--out", str(runs), "--json", str(tmp_path / "early.json"),
                    "--markdown", str(tmp_path / "early.md"))
    assert early.returncode == 1, early.stdout + early.stderr
    stop = _manifest(runs, "int2kv")
    assert stop["status"] == "stopped" and stop["early_stop"]["at"] < stop["early_stop"]["of"] == 10
    assert "stopped at" in early.stderr and "saved" in early.stderr
    data = json.loads((tmp_path / "early.json").read_text())
    verdict = data["verdicts"][0]
    assert verdict["stopped"].startswith(f"stopped at {stop['early_stop']['at']} of 10 items")
    decided = set(stop["early_stop"]["rules"])
    assert decided and _failing(data) == decided  # nothing else is judged on the items it happened to reach
    assert "stopped at" in (tmp_path / "early.md").read_text()

    full = run_cli(*ARGS, "--out", str(runs), "--no-early-stop", "--json", str(tmp_path / "full.json"))
    assert full.returncode == 1, full.stdout + full.stderr
    assert "resuming" in full.stderr
    done = _manifest(runs, "int2kv")
    assert done["status"] == "complete" and "early_stop" not in done and done["items_total"] == 10
    assert decided <= _failing(json.loads((tmp_path / "full.json").read_text()))


def test_confirmation_keeps_flips_that_reproduce(runs: Path, tmp_path: Path) -> None:
    cand = next(runs.glob("int2kv-*"))
    before = RunStore(cand).samples_path.read_bytes()
    # one re-ask a flip (each re-ask of int2kv's many flips is a generation at batch 1 on one core)
    res = run_cli(*ARGS, "--out", str(runs), "--confirm", "1", "--json", str(tmp_path / "c.json"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert RunStore(cand).samples_path.read_bytes() == before
    flips = json.loads((tmp_path / "c.json").read_text())["comparisons"][0]["harmful_flips"]
    counted = [f for f in flips if f["confirmations"] is not None]
    assert counted and all(f["confirmations"]["asked"] == 1 and f["confirmations"]["confirmed"] for f in counted)
    assert "confirmed: reproduced in 1 of 1 re-asks" in res.stdout


def test_injected_digit_changes_are_detected_at_the_predicted_rate(runs: Path) -> None:
    """benchmarks/gate_power.py on the stored baseline: the real outputs with one digit of the answer
    changed in a share r of the gated fields, scored again. All changed: the gate fails; none: it passes;
    at r = 0.15 over 300 seeds the failure rate matches 1 - (1 - r)^n for the zero-flip rules."""
    import random
    import sys

    from evalrun.evals.api import score
    from evalrun.evals.gate import GateConfig, evaluate
    from evalrun.evals.compare import pair
    from evalrun.evals.results import RunResult
    from evalrun.evals.scoring import stability
    from tests.conftest import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gate_power

    run = RunResult.load(next(runs.glob("baseline-*")))
    base = score(run)
    stab = stability([base])
    gate = GateConfig()
    targets = gate_power.gated_fields(base, gate, stab)
    assert len(targets) >= 5
    cand, flipped = gate_power.synthetic(run, base, targets, 1.0, random.Random(0))
    assert flipped == len(targets)
    assert evaluate(pair(base, cand, "b", "c"), gate, stab=stab).status == "fail"
    same, none = gate_power.synthetic(run, base, targets, 0.0, random.Random(0))
    assert none == 0 and evaluate(pair(base, same, "b", "c"), gate, stab=stab).status == "pass"
    rate, seeds = 0.15, 300
    failed = sum(evaluate(pair(base, gate_power.synthetic(run, base, targets, rate, random.Random(s))[0], "b", "c",
                               n_resamples=50), gate, stab=stab).status == "fail" for s in range(seeds))
    predicted = gate_power.predicted(base, gate, stab, rate)
    assert predicted == pytest.approx(1 - (1 - rate) ** len(targets), rel=1e-9)
    assert abs(failed / seeds - predicted) < 0.08, (failed / seeds, predicted)


def test_a_stop_in_the_last_batch_is_a_complete_run(tmp_path: Path, model_runs: ModelRuns) -> None:
    """--limit 1: both items share the one batch, so a FAIL decided there leaves nothing to stop: the run
    is complete, and comparing again reuses it (once looped, waiting for a stop that could not come)."""
    args = ("compare", str(CONFIGS / "baseline.yaml"), str(CONFIGS / "int2kv.yaml"), "--limit", "1",
            "--out", str(tmp_path))
    model_runs.copy(tmp_path, CONFIGS / "baseline.yaml", limit=1)  # the session's baseline: int2kv is generated
    first = run_cli(*args)
    assert first.returncode == 1, first.stdout + first.stderr
    assert _manifest(tmp_path, "int2kv")["status"] == "complete"
    again = run_cli(*args, timeout=180)
    assert again.returncode == 1 and "int2kv: reusing stored run" in again.stderr


def test_plan_says_how_many_items_a_rate_needs(runs: Path, tmp_path: Path) -> None:
    """`evalrun plan` on the stored baseline: the items each pack needs for 1% at 95%, from the closed
    form 1 - 0.99^n >= 0.95 (n = 299 watched fields), and the time at the run's measured speed."""
    import math

    from evalrun.evals import api

    res = run_cli("plan", str(CONFIGS / "baseline.yaml"), "--rate", "0.01", "--power", "0.95", "--out", str(runs))
    assert res.returncode == 0, res.stdout + res.stderr
    text = " ".join(res.stdout.split())  # the table's title wraps at the terminal width
    assert "Items needed to detect a 1% harmful flip rate with 95% probability" in text
    assert "no replicates stored: every flip counts" in text
    result = api.plan(api.load(CONFIGS / "baseline.yaml"), 0.01, 0.95, out=runs, log=lambda m: None)
    needle = next(p for p in result.packs if p.pack == "needle_numbers")
    assert needle.fields > 0 and needle.seconds_per_item and needle.seconds_per_item > 0
    # 299 watched fields at this pack's share per item; each rule's share (amount, number) is rounded
    # down on its own, which can cost an item or two
    least = math.ceil(299 * needle.items / needle.fields)
    assert least <= needle.needed <= least + 2
    assert f"{needle.needed:,}" in res.stdout
    missing = run_cli("plan", str(CONFIGS / "baseline.yaml"), "--out", str(tmp_path / "empty"))
    assert missing.returncode == 2 and "no stored run of this config" in missing.stderr
