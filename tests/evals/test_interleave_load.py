"""Interleaved timing on a loaded machine: the re-timing window records how busy the machine was (the
probe sequential timing uses, src/evalrun/evals/timing/load.py), and a speed rule on a busy window is not vouched
for (exit 4, the load named), whatever its interval says. A quiet window is judged as before."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evalrun.contract.manifest import MachineLoad
from evalrun.contract.types import Retiming
from evalrun.evals import api
from evalrun.evals.config import parse_config
from evalrun.evals.gate import load_gate
from evalrun.evals.results import RunResult
from evalrun.evals.speed import speed_table
from evalrun.evals.store import RunStore
from tests.conftest import tiny_config
from tests.evals.test_speed_load import Burners
from tests.evals.test_speed_rules import _run

GATE = {"speed": [{"min_speedup": {"metric": "tpot_p50", "value": 1.3}}]}


def _retimed(tmp: Path, machine: MachineLoad | None) -> tuple[RunResult, RunResult]:
    """A baseline and a 2x faster candidate whose interleaved re-timings are stored with that window's load."""
    base, cand = _run("base", 1.0), _run("fast", 0.5)
    cand = dataclasses.replace(cand, dir=tmp / "fast")
    cand.dir.mkdir()
    key = base.manifest.key or ""
    RunStore(cand.dir).append_interleaved(
        [Retiming(baseline_key=key, pair=k % 4, side=side, first=side == "baseline", generation=g, machine=machine)
         for side, run in (("baseline", base), ("candidate", cand)) for k, g in enumerate(run.generations.values())])
    return base, cand


def _rule(base: RunResult, cand: RunResult):  # type: ignore[no-untyped-def]
    verdict = api.compare_results(base, [(cand, load_gate(GATE))]).verdicts[0]
    [rule] = [r for r in verdict.rules if r.rule.startswith("min_speedup")]
    return rule, verdict


def _load(others: float) -> MachineLoad:
    return MachineLoad(cpus=2, seconds=4.0, others_share=others, steal_share=0.0, own_share=0.5,
                       loadavg_start=[5.9, 3.0, 2.0], loadavg_end=[6.2, 3.1, 2.0])


def test_a_busy_re_timing_window_is_not_vouched_for(tmp_path: Path) -> None:
    base, cand = _retimed(tmp_path, _load(0.45))
    rule, verdict = _rule(base, cand)
    assert rule.status == "incomplete" and verdict.exit_code == 4
    assert "not vouched for" in rule.detail and "interleaved re-timing" in rule.detail
    assert "45% of the CPU time during the interleaved re-timing" in rule.detail
    assert "load average 5.9 -> 6.2" in rule.detail and "quiet is under 10%" in rule.detail
    row = speed_table(api.compare_results(base, [(cand, load_gate(GATE))])).rows[1]
    assert row.timing == "interleaved" and row.timing_warning is not None and "busy machine" in row.timing_warning


def test_a_quiet_re_timing_window_is_judged(tmp_path: Path) -> None:
    base, cand = _retimed(tmp_path, _load(0.03))
    rule, verdict = _rule(base, cand)
    assert rule.status == "pass" and verdict.exit_code == 0 and "WARNING" not in rule.detail
    assert "interleaved re-timing (4 batch pairs, A B A B)" in rule.detail


def test_a_re_timing_stored_before_its_load_was_recorded_says_so(tmp_path: Path) -> None:
    base, cand = _retimed(tmp_path, None)
    rule, _verdict = _rule(base, cand)
    assert rule.status == "pass" and "load was not recorded for the interleaved re-timing" in rule.detail


@pytest.mark.slow
def test_busy_loops_during_the_re_timing_are_measured_and_the_rule_exits_4(tiny_model_dir: Path,
                                                                           tmp_path: Path) -> None:
    """The tiny model timed interleaved with a busy loop on every core: each stored re-timing carries
    the window's load, and the speed rule is not vouched for, naming it."""
    shapes = [{"name": "s", "input_tokens": 48, "output_tokens": 6}]
    raw = tiny_config(tiny_model_dir, batch_size=2, tasks=[{"pack": "latency", "shapes": shapes, "count": 4}])
    base = parse_config(raw, file=tmp_path / "b.yaml")
    cand = parse_config({**raw, "name": "cand", "timing": "interleaved", "timing_batches": 2}, file=tmp_path / "c.yaml")
    with Burners():
        report = api.compare(base, [cand], out=tmp_path / "runs", gate=load_gate(GATE), log=lambda _m: None)
    records = RunStore(report.candidates[0].run.dir).read_interleaved(report.baseline.manifest.key or "")
    assert records and all(r.machine is not None for r in records)
    others = records[0].machine.others_share if records[0].machine else None
    assert others is not None and others >= 0.3, others
    [rule] = [r for r in report.verdicts[0].rules if r.rule.startswith("min_speedup")]
    assert rule.status == "incomplete" and report.verdicts[0].exit_code == 4
    assert f"{100 * others:.0f}% of the CPU time during the interleaved re-timing" in rule.detail


def test_a_served_re_timing_is_not_judged_by_this_processes_load(tmp_path: Path) -> None:
    """A server's own work (a child not yet reaped) would read as other processes': its load is "not measured"."""
    base, cand = _retimed(tmp_path, _load(0.9))
    for run in (base, cand):
        run.manifest = run.manifest.merged({"device": "remote"})
    rule, _verdict = _rule(base, cand)
    assert rule.status == "pass" and "interleaved timings, load not measured" in rule.detail
