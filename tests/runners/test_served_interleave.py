"""Interleaved timing with launched servers: `evalrun compare` of llama.cpp f16 against q4_0 K/V with
`timing: interleaved` runs each config with its own server (one at a time), then re-times the sample with
both servers up at once (launched once each for the whole re-timing, not per batch), and leaves no process;
llama-cpp-python's server reports no timings of its own, and the manifest and the report say so."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.runners.test_server_lifecycle import (
    _assert_none_left, _ctrl_c_reaches_it, _engine_config, _launched, _run_dir, needs_engine,
)

# short prompts: a server's prefill on one thread of a loaded machine is most of the test's time
TASKS = [{"pack": "needle_numbers", "lengths": [128], "depths": [0.0, 1.0], "values": ["integer"]}]


def _launches(run_dir: Path) -> int:
    return (run_dir / "server.log").read_text().count(": starting ")  # the line evalrun writes at each launch


@pytest.mark.model
@pytest.mark.slow
@needs_engine
def test_interleaved_timing_keeps_both_launched_servers_up_then_stops_them(tmp_path: Path) -> None:
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    base = _engine_config(tmp_path, "llamacpp-f16.yaml", mark, tasks=TASKS, tokens=4)
    cand = _engine_config(tmp_path, "llamacpp-q4kv.yaml", mark, tasks=TASKS, tokens=4)
    with cand.open("a") as fh:
        fh.write("timing: interleaved\ntiming_batches: 2\n")  # 2 items: one batch pair
    report = tmp_path / "report.json"
    proc = subprocess.Popen([sys.executable, "-m", "evalrun.cli", "compare", str(base), str(cand), "--out", str(out),
                             "--json", str(report)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_ctrl_c_reaches_it)
    seen: set[int] = set()
    at_once = 0
    try:
        while proc.poll() is None:
            live = _launched(mark)
            at_once = max(at_once, len(live))
            seen |= {p.pid for p in live}
            time.sleep(0.05)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (0, 1, 4), stdout + stderr  # 2 items: a verdict or INCOMPLETE, never a crash
    _assert_none_left(mark)
    err = " ".join(stderr.split())
    assert "interleaved timing against llamacpp-f16: 1 batch pairs" in err, err
    # each run launched its server once, then the re-timing both at once: four launches, two up together
    assert at_once == 2 and len(seen) == 4, (at_once, seen)
    base_dir, cand_dir = _run_dir(out, "llamacpp-f16"), _run_dir(out, "llamacpp-q4kv")
    assert _launches(base_dir) == 2 and _launches(cand_dir) == 2
    retimed = [json.loads(ln) for ln in (cand_dir / "interleaved.jsonl").read_text().splitlines() if ln.strip()]
    assert sorted(r["side"] for r in retimed) == ["baseline"] * 2 + ["candidate"] * 2
    assert all(r["generation"]["error"] is None and r["generation"]["prefill_seconds"] > 0 for r in retimed)

    manifest = json.loads((cand_dir / "manifest.json").read_text())
    assert manifest["server"]["engine_timings"] == {"source": None, "note": "the server reports no timings",
                                                    "requests_answered": 2}
    speed = json.loads(report.read_text())["speed"]
    rows = {r["run"]: r for r in speed["rows"]}
    assert rows["llamacpp-q4kv"]["timing"] == "interleaved"
    assert rows["llamacpp-q4kv"]["server_timings"]["source"] is None
    assert "llamacpp-q4kv: the server reports no timings" in speed["server_note"]
