"""A launched run is answered only by the process evalrun started, and nothing of it outlives evalrun.

Against tests/runners/engine_fake.py (a real HTTP engine without a model, started by the config's
`server:` as any engine is): a fixed port that another server already answers on is refused before
anything launches; answers that arrive after the launched process exited are never stored; a SIGKILL
of evalrun ends every process of an engine started through a wrapper that does not exec; a linked
`server.log` is refused; the key an engine prints while loading never reaches the progress line;
the readiness poll sends the key, and a refused key fails at once naming `openai.api_key_env`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psutil

from evalrun.evals.config import load_config
from evalrun.evals.run import prepare
from evalrun.runners.openai._server_process import free_port
from tests.conftest import ROOT, run_cli
from tests.fakes.openai_server import OpenAITestServer, ScriptedBackend
from tests.runners.test_server_lifecycle import (
    TASKS, _assert_none_left, _launched, _marked, _run_dir, _samples, _write,
)

ENGINE = [sys.executable, "-m", "tests.runners.engine_fake", "{port}"]


def _config(tmp_path: Path, mark: str, command: list[str], name: str = "fake", **over: Any) -> Path:
    server = {"command": command, "env": {"EVALRUN_TEST_MARK": mark}, "version": "test", "grace": 1,
              "startup_timeout": 60} | over.pop("server", {})
    return _write(tmp_path / f"{name}.yaml", {"name": name, "runner": "openai", "model": "smollm2-135m",
                                              "server": server, "generation": {"max_new_tokens": 4},
                                              "tasks": TASKS[:1]} | over)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _asked(out: Path) -> bool:
    """Whether the launched engine has been asked for an answer (its access log, in the run's server.log)."""
    logs = list(out.glob("*/server.log")) if out.exists() else []
    return bool(logs) and "POST /v1/" in logs[0].read_text(errors="replace")


def _kill_marked(mark: str) -> None:
    for proc in _marked(mark):
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()


def test_a_fixed_port_another_server_answers_on_is_refused_before_launch(tmp_path: Path) -> None:
    """Before: the launched engine died with "address in use", the other server answered every item, the run
    passed (exit 0) and was stored under this config's key."""
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    with OpenAITestServer(ScriptedBackend()) as other:
        port = int(other.base_url.rsplit(":", 1)[1].split("/")[0])
        cfg = _config(tmp_path, mark, ENGINE, server={"port": port})
        done = run_cli("run", str(cfg), "--out", str(out), timeout=120)
        asked = list(other.state.records)
    err = " ".join(done.stderr.split())
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{cfg}: server.port: 127.0.0.1:{port} already answers connections" in err, err
    assert asked == []  # not one item went to the other server
    assert _samples(_run_dir(out, "fake")) == []
    _assert_none_left(mark)


def test_answers_after_the_launched_process_exited_are_never_stored(tmp_path: Path) -> None:
    """An engine that daemonizes: the process evalrun launched exits once the daemon (a session of its own,
    beyond evalrun's reach) has answered one item. Before: the daemon's second answer was stored too and the
    run passed; now it is refused (exit 3, the launch's exit named) and the run is recorded as failed."""
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    cfg = _config(tmp_path, mark, [*ENGINE, "--leave-after", "1", "--per-token", "0.3"],
                  openai={"concurrency": 1})
    try:
        done = run_cli("run", str(cfg), "--out", str(out), timeout=120)
    finally:
        _kill_marked(mark)  # the daemon escaped the launched group on purpose
    err = " ".join(done.stderr.split())
    assert done.returncode == 3, done.stdout + done.stderr
    assert "the server exited with code 0" in err, err
    run_dir = _run_dir(out, "fake")
    assert len(_samples(run_dir)) <= 1
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "failed"


def test_keep_servers_never_reports_a_server_that_exited(tmp_path: Path) -> None:
    """Before: "server left up at ... (process group N)" for a group that had already exited."""
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    cfg = _config(tmp_path, mark, [*ENGINE, "--leave-after", "1", "--per-token", "0.3"],
                  openai={"concurrency": 1})
    try:
        done = run_cli("run", str(cfg), "--out", str(out), "--keep-servers", timeout=120)
    finally:
        _kill_marked(mark)
    err = " ".join(done.stderr.split())
    assert done.returncode == 3, done.stdout + done.stderr
    assert "left up" not in err and "the server exited with code 0" in err, err


def test_sigkill_of_evalrun_ends_every_process_of_a_wrapped_engine(tmp_path: Path) -> None:
    """`sh -c "engine & wait"`: the parent-death signal reached the shell only, and the engine kept its port."""
    mark, out, port = uuid.uuid4().hex, tmp_path / "runs", free_port()
    wrapped = ["sh", "-c", " ".join([*ENGINE[:-1], "{port}", "--per-token", "1"]) + " & wait"]
    cfg = _config(tmp_path, mark, wrapped, server={"port": port})
    proc = subprocess.Popen([sys.executable, "-m", "evalrun.cli", "run", str(cfg), "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _listening(port) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert _listening(port) and proc.poll() is None, "the engine never came up"
        assert len(_marked(mark)) >= 2  # the shell and the engine it started (and evalrun's supervisor)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        _assert_none_left(mark, within=5.0)  # the config's grace (1 s), and time for a loaded machine
        assert not _listening(port)
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_marked(mark)


def test_a_killed_supervisor_takes_the_engine_with_it_and_the_run_stops(tmp_path: Path) -> None:
    """What the real-engine lifecycle tests do to "the server" (the session leader evalrun launched): the engine
    goes too (its parent-death signal), the run stops with the supervisor's exit, and nothing is left."""
    mark, out, port = uuid.uuid4().hex, tmp_path / "runs", free_port()
    cfg = _config(tmp_path, mark, [*ENGINE, "--per-token", "1"], server={"port": port})
    proc = subprocess.Popen([sys.executable, "-m", "evalrun.cli", "run", str(cfg), "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not _asked(out) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        [supervisor] = _launched(mark)
        supervisor.kill()
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_marked(mark)
    assert proc.returncode == 3, stderr
    assert "exited with code -9 during the run" in " ".join(stderr.split()), stderr
    _assert_none_left(mark)
    assert not _listening(port)


def test_the_supervisor_exits_as_its_command_did() -> None:
    """So the failure line names the engine's own exit (a code, or the signal that killed it)."""
    from evalrun.runners.openai._server_process import _SUPERVISOR

    for script, code in (("exit 7", 7), ("kill -KILL $$", -signal.SIGKILL), ("kill -TERM $$", -signal.SIGTERM)):
        read_end, write_end = os.pipe()
        proc = subprocess.Popen([sys.executable, "-I", _SUPERVISOR, str(read_end), "1", "sh", "-c", script],
                                pass_fds=(read_end,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        os.close(read_end)
        try:
            out, _ = proc.communicate(timeout=30)
        finally:
            os.close(write_end)
        assert proc.returncode == code, (script, proc.returncode, out)


def test_a_linked_server_log_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    cfg = _config(tmp_path, mark, ENGINE)
    run_dir = prepare(load_config(cfg), out).dir
    run_dir.mkdir(parents=True)
    target = tmp_path / "elsewhere.log"
    target.write_text("someone else's file\n")
    (run_dir / "server.log").symlink_to(target)
    done = run_cli("run", str(cfg), "--out", str(out), timeout=120)
    err = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{run_dir / 'server.log'}: is a symbolic link" in err, err
    assert target.read_text() == "someone else's file\n"
    assert _samples(run_dir) == []
    _assert_none_left(mark)


def test_the_key_an_engine_prints_while_loading_never_reaches_the_progress_line(tmp_path: Path) -> None:
    """Before: CI's plain progress line "starting server on port N: 5 s of 60 s; log: ..." quoted it raw."""
    mark, out, key = uuid.uuid4().hex, tmp_path / "runs", "sk-" + uuid.uuid4().hex
    cfg = _config(tmp_path, mark, [*ENGINE, "--print-env", "EVALRUN_TEST_KEY", "--load", "6"],
                  openai={"api_key_env": "EVALRUN_TEST_KEY"})
    done = run_cli("run", str(cfg), "--out", str(out), env={"EVALRUN_TEST_KEY": key}, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    err = " ".join(done.stderr.split())
    assert "log: args: api_key=***, port=" in err, err  # the line was shown, without the key
    assert key not in done.stdout + done.stderr
    _assert_none_left(mark)


def test_the_readiness_poll_sends_the_key_and_a_refused_key_fails_at_once(tmp_path: Path) -> None:
    """Before: the poll sent no key, so a key-protected engine was never ready (the whole startup_timeout,
    and the 401 never mentioned)."""
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    engine = [*ENGINE, "--key-env", "ENGINE_KEY"]
    good = _config(tmp_path, mark, engine, name="keyed", openai={"api_key_env": "EVALRUN_TEST_KEY"},
                   server={"env": {"EVALRUN_TEST_MARK": mark, "ENGINE_KEY": "right-key"}, "startup_timeout": 20})
    done = run_cli("run", str(good), "--out", str(out), env={"EVALRUN_TEST_KEY": "right-key"}, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_samples(_run_dir(out, "keyed"))) == 2

    bad = _config(tmp_path, mark, engine, name="refused", openai={"api_key_env": "EVALRUN_TEST_KEY"},
                  server={"env": {"EVALRUN_TEST_MARK": mark, "ENGINE_KEY": "right-key"}, "startup_timeout": 300})
    started = time.monotonic()
    done = run_cli("run", str(bad), "--out", str(out), env={"EVALRUN_TEST_KEY": "wrong-key"}, timeout=120)
    err = " ".join(done.stderr.split())
    assert done.returncode == 3, done.stdout + done.stderr
    assert time.monotonic() - started < 60, "waited for the startup timeout"
    assert f"{bad}: openai.api_key_env: the server answered 401" in err and "$EVALRUN_TEST_KEY" in err, err
    assert "wrong-key" not in err and "right-key" not in err
    _assert_none_left(mark)
