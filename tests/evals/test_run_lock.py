"""One writer per run: concurrent `evalrun run` processes on one run generate each item once
and the manifest keeps every session; a lock left by a killed process is taken over."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from tests.conftest import ROOT, tiny_config
from tests.machine import timed, within


def _wait_for(predicate, seconds: float = 180) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_three_concurrent_runs_generate_each_item_once(tiny_model_dir: Path, tmp_path: Path) -> None:
    data = tiny_config(tiny_model_dir)
    cfg_path = tmp_path / "tiny.yaml"
    cfg_path.write_text(yaml.safe_dump(data))
    out = tmp_path / "runs"
    cfg = parse_config(data, file=cfg_path)
    earlier = execute(prepare(cfg, out, limit=1), log=lambda _m: None)  # an earlier session: 1 item per pack
    run_dir = earlier.dir
    assert earlier.generated == 1

    # hold the lock ourselves so that the three are sure to overlap, then let them race
    fd = os.open(run_dir / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    logs, procs = [], []
    env = {**os.environ, "COLUMNS": "2000", "PYTHONUNBUFFERED": "1"}
    try:
        for i in range(3):
            err, std = tmp_path / f"err{i}.txt", tmp_path / f"out{i}.txt"
            logs.append((std, err))
            procs.append(subprocess.Popen([sys.executable, "-m", "evalrun.cli", "run", str(cfg_path), "--out", str(out)],
                                          cwd=ROOT, env=env, stdout=std.open("w"), stderr=err.open("w")))
        waiting = f"waiting for another process generating this run (pid {os.getpid()})"
        assert _wait_for(lambda: all(waiting in e.read_text() for _, e in logs)), [e.read_text() for _, e in logs]
    finally:
        os.close(fd)
    for p in procs:
        assert p.wait(timeout=300) == 0, [e.read_text() for _, e in logs]

    ids = [json.loads(line)["item_id"] for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert len(ids) == 6 and len(set(ids)) == 6, ids
    stdouts = [s.read_text() for s, _ in logs]
    assert sum("5 generated" in s for s in stdouts) == 1 and sum("reused" in s for s in stdouts) == 2, stdouts
    sessions = json.loads((run_dir / "manifest.json").read_text())["sessions"]
    assert [s["generated"] for s in sessions] == [1, 5], "the earlier session is kept"
    assert sessions[1]["pid"] in {p.pid for p in procs} and sessions[1]["waited_for_lock"] is True


HOLDER = """
import sys, time
from pathlib import Path
from evalrun.evals.store import run_lock
with run_lock(Path(sys.argv[1]), log=print):
    print("locked", flush=True)
    time.sleep(600)
"""


@pytest.mark.slow
def test_a_lock_left_by_a_killed_process_is_taken_over(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = parse_config(tiny_config(tiny_model_dir), file=tmp_path / "cfg.yaml")
    prepared = prepare(cfg, tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(prepared.dir)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        probe = os.open(prepared.dir / "lock", os.O_RDWR)
        try:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                raise AssertionError("the holder's lock was not held")
            except BlockingIOError:
                pass
        finally:
            os.close(probe)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert (prepared.dir / "lock").read_text().strip() == str(holder.pid), "the dead holder's pid is still written"

    seen: list[str] = []
    with timed() as t:
        result = execute(prepared, log=seen.append)
    assert result.generated == 6
    within(t, 60, "a run whose lock holder died")
    assert not any("waiting" in m for m in seen), seen
    assert result.manifest["sessions"][-1]["pid"] == os.getpid()
    assert (prepared.dir / "lock").read_text().strip() == str(os.getpid())
