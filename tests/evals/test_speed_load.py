"""Speed you can trust by default: every run records how busy the machine was while it was timed,
and a speedup from sequential timings carries a warning measured from those records (the decision
on recorded figures, the probe under a real busy loop, and a real comparison on the tiny model with
load injected during the candidate's run only); a speedup from interleaved timing says so."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from evalrun.contract.manifest import RunManifest
from evalrun.evals import api
from evalrun.evals.timing import RunLoad, Snapshot, load as speed_load, measured, run_load, timings_warning
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.evals.speed import speed_table
from evalrun.reports.text import units
from evalrun.reports.formats import render_speed, render_speed_markdown
from tests.conftest import tiny_config

# a busy loop that ends by itself even if the test dies before killing it
BURN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"


class Burners:
    """One CPU-burning process per core (bounded in time), started and stopped around one run."""

    def __init__(self, seconds: float = 120.0) -> None:
        n = min(os.cpu_count() or 2, 16)
        self.procs = [subprocess.Popen([sys.executable, "-c", BURN.format(seconds=seconds)]) for _ in range(n)]

    def __enter__(self) -> "Burners":
        time.sleep(0.3)  # let them reach their loop
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def _manifest(*sessions: dict, device: str = "cpu") -> RunManifest:
    return RunManifest.model_validate({"device": device, "sessions": list(sessions)})


def _session(others: float, steal: float = 0.0, generated: int = 6) -> dict:
    return {"generated": generated, "machine": {"cpus": 2, "seconds": 30.0, "others_share": others,
                                                "steal_share": steal, "own_share": 0.9 - others,
                                                "loadavg_start": [1.0, 1.0, 1.0], "loadavg_end": [3.5, 2.0, 1.0]}}


# --------------------------------------------------------------------------- the decision, on recorded figures


def test_quiet_runs_need_no_warning_and_say_they_were_quiet() -> None:
    runs = [("baseline", run_load(_manifest(_session(0.02)))), ("int4kv", run_load(_manifest(_session(0.06))))]
    assert timings_warning(runs) is None
    assert "quiet machine" in speed_load.quiet_text(runs) and "at most 6%" in speed_load.quiet_text(runs)


def test_load_that_changes_between_the_runs_is_a_warning_with_its_figures() -> None:
    base, cand = run_load(_manifest(_session(0.03))), run_load(_manifest(_session(0.71)))
    text = timings_warning([("baseline", base), ("int4kv", cand)])
    assert text is not None and "busy machine" in text
    assert "3% of the CPU time during baseline" in text and "71% during int4kv" in text and "load average 1.0 -> 3.5" in text
    assert "--timing interleaved" in text


def test_steal_alone_is_a_warning() -> None:
    text = timings_warning([("baseline", run_load(_manifest(_session(0.01, steal=0.12)))),
                               ("int4kv", run_load(_manifest(_session(0.01))))])
    assert text is not None and "steal 12%" in text


def test_the_busiest_generating_session_counts_and_an_unrecorded_one_is_said() -> None:
    # resumed: a quiet first session, a busy second one; a session that generated nothing is not timing
    load = run_load(_manifest(_session(0.02), _session(0.5), _session(0.9, generated=0)))
    assert load.others_share == 0.5
    older = run_load(_manifest({"generated": 6}))  # a run stored before the load was recorded
    text = timings_warning([("baseline", older), ("int4kv", run_load(_manifest(_session(0.0))))])
    assert text is not None and "not recorded for baseline" in text
    remote = timings_warning([("baseline", run_load(_manifest(_session(0.0), device="remote"))),
                                 ("served", run_load(_manifest(_session(0.0), device="remote")))])
    assert remote is not None and "load not measured" in remote and "server" in remote


def test_the_probe_subtracts_this_process_and_counts_steal() -> None:
    start = Snapshot(wall=0.0, total=100.0, busy=20.0, steal=1.0, own=5.0, loadavg=(1.0, 1.0, 1.0))
    end = Snapshot(wall=10.0, total=120.0, busy=36.0, steal=2.0, own=15.0, loadavg=(2.0, 1.0, 1.0))
    rec = measured(start, end)
    assert rec is not None
    # 20 s of CPU over the interval, 16 busy, 10 of them this process's: others 6 of 20, steal 1 of 20
    assert rec["others_share"] == pytest.approx(0.3) and rec["own_share"] == pytest.approx(0.5)
    assert rec["steal_share"] == pytest.approx(0.05) and rec["seconds"] == 10.0
    assert measured(None, end) is None and measured(end, end) is None


def test_the_probe_reads_nothing_where_there_is_no_proc(tmp_path: Path) -> None:
    assert speed_load.snapshot(tmp_path / "missing") is None


@pytest.mark.slow
def test_the_probe_sees_a_busy_loop_on_every_core() -> None:
    """Real load: one busy loop per core while this process sleeps."""
    with Burners():
        start = speed_load.snapshot()
        time.sleep(1.5)
        rec = measured(start, speed_load.snapshot())
    assert rec is not None and rec["others_share"] >= 0.6 and rec["own_share"] < 0.2
    assert speed_load.busy(RunLoad(rec["others_share"], rec["steal_share"], None))


# --------------------------------------------------------------------------- a real comparison


@pytest.mark.slow
def test_load_during_the_candidates_run_is_recorded_and_warned(tiny_model_dir: Path, tmp_path: Path) -> None:
    """The tiny model, the baseline then the candidate timed sequentially, a busy loop on both cores
    during the candidate's run only: its manifest records the load and every output warns."""
    shapes = [{"name": "s", "input_tokens": 48, "output_tokens": 6}]
    base_cfg = parse_config(tiny_config(tiny_model_dir, batch_size=2, tasks=[{"pack": "latency", "shapes": shapes,
                                                                             "count": 6}]), file=tmp_path / "b.yaml")
    cand_cfg = base_cfg.model_copy(update={"name": "busy", "timing": "sequential"})
    out = tmp_path / "runs"
    base = execute(prepare(base_cfg, out), log=lambda _m: None)
    with Burners():
        cand = execute(prepare(cand_cfg, out), log=lambda _m: None)
    [session] = cand.manifest.sessions
    assert session.machine is not None and session.machine.others_share is not None
    assert session.machine.others_share >= 0.3 and session.machine.loadavg_end is not None
    assert "machine" in cand.manifest.to_dict()["sessions"][0]  # written to manifest.json

    report = api.compare_results(base, [(cand, None)])
    table = speed_table(report)
    row = table.rows[1]
    assert row.timing == "sequential" and row.timing_warning is not None
    share = f"{100 * session.machine.others_share:.0f}% during busy"
    assert "busy machine" in row.timing_warning and share in row.timing_warning
    assert units.speedup_cell(row, "e2el_p50").endswith("sequential ⚠")
    assert f"busy: WARNING: speedups from sequential timings on a busy machine" in table.spread_note
    console = Console(record=True, width=240)
    render_speed(console, table)
    shown = console.export_text()
    assert "sequential ⚠" in shown and share in shown
    assert "sequential ⚠" in "\n".join(render_speed_markdown(table))


def test_a_speed_rule_on_a_busy_machines_sequential_timings_is_not_vouched_for() -> None:
    from tests.evals.test_speed_rules import _run

    from evalrun.evals.gate import load_gate

    base, cand = _run("base", 1.0), _run("fast", 0.5)
    gate = load_gate({"speed": [{"min_speedup": {"metric": "tpot_p50", "value": 1.3}}]})
    [rule] = [r for r in api.compare_results(base, [(cand, gate)]).verdicts[0].rules if r.rule.startswith("min_")]
    assert rule.status == "pass" and "not recorded" in rule.detail  # older runs: measured, and said
    base.manifest = base.manifest.merged({"sessions": [_session(0.02)]})
    cand.manifest = cand.manifest.merged({"sessions": [_session(0.4)]})
    verdict = api.compare_results(base, [(cand, gate)]).verdicts[0]
    [rule] = [r for r in verdict.rules if r.rule.startswith("min_")]
    assert rule.status == "incomplete" and "not vouched for" in rule.detail and "40% during fast" in rule.detail
    assert verdict.exit_code == 4
    cand.manifest = cand.manifest.merged({"sessions": [_session(0.03)]})
    [rule] = [r for r in api.compare_results(base, [(cand, gate)]).verdicts[0].rules if r.rule.startswith("min_")]
    assert rule.status == "pass" and "WARNING" not in rule.detail and "not recorded" not in rule.detail


@pytest.mark.slow
def test_compare_timing_flag_labels_each_speedup_in_the_terminal(tiny_model_dir: Path, tmp_path: Path) -> None:
    """`compare --timing sequential` shows each run's own timings labelled sequential; `--timing
    interleaved` on the same stored runs re-times the candidate side by side and every speedup cell
    and the note under the table say so."""
    import yaml

    from tests.conftest import run_cli

    shapes = [{"name": "s", "input_tokens": 48, "output_tokens": 6}]
    base = tiny_config(tiny_model_dir, batch_size=2, tasks=[{"pack": "latency", "shapes": shapes, "count": 4}])
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(base))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({**base, "name": "cand", "timing_batches": 2}))
    args = ["compare", str(tmp_path / "b.yaml"), str(tmp_path / "c.yaml"), "--out", str(tmp_path / "runs")]
    seq = run_cli(*args, "--timing", "sequential")
    assert seq.returncode == 0, seq.stdout + seq.stderr
    assert "interleaved timing against" not in seq.stderr and seq.stdout.count(" sequential") >= 3
    assert "cand: WARNING: speedups from sequential timings" in " ".join(seq.stdout.split()) or \
        "cand: speedups from sequential timings on a quiet machine" in " ".join(seq.stdout.split())
    res = run_cli(*args, "--timing", "interleaved", "--markdown", str(tmp_path / "s.md"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "interleaved timing against tiny" in res.stderr
    assert res.stdout.count(" interleaved") >= 3  # the TTFT, TPOT and E2EL speedups of the candidate
    assert "speedups from interleaved re-timing (2 batch pairs, A B A B)" in " ".join(res.stdout.split())
    assert "interleaved" in (tmp_path / "s.md").read_text() and " sequential" not in res.stdout
