"""`server:` in a config: evalrun launches the engine, waits for it, runs, and stops it.

On the real llama.cpp server (llama-cpp-python, built by `make engines-llamacpp`
into .engines/llamacpp) with the default model's GGUF: start, ready, run, stop
with no process left; a server killed mid-run keeps the stored answers (exit 3)
and the same command resumes with nothing lost or doubled; Ctrl-C leaves no
process; a stored baseline is reused without launching it. Without an engine:
a command that never becomes ready, or exits, is exit 3 with its log; the
settings are validated; the key changes with any flag and never with the port.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config
from evalrun.evals.run import prepare
from tests.conftest import ROOT, run_cli
from tests.runners.served_records import assert_served_logprobs

ENGINE = ROOT / ".engines" / "llamacpp"
ENGINE_CONFIGS = ROOT / "configs" / "engines"
needs_engine = pytest.mark.skipif(not (ENGINE / ".installed").exists(),
                                  reason="llama.cpp engine not built here (make engines-llamacpp)")
TASKS = [{"pack": "needle_numbers", "lengths": [512], "depths": [0.0, 1.0], "values": ["integer"]},
         {"pack": "doc_fields", "mode": "per_field", "documents": 1, "lengths": [600], "fields": ["total", "tax"]}]


def _marked(mark: str) -> list[psutil.Process]:
    """Live processes whose environment carries `mark` (the servers one test launched)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get("EVALRUN_TEST_MARK") == mark:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def _launched(mark: str) -> list[psutil.Process]:
    """The servers: marked processes that lead a session of their own, as evalrun starts a server (its supervisor,
    src/evalrun/runners/openai/_supervisor.py, whose death takes the engine with it; a kept server itself). Its
    `version_command` carries the same environment but runs in evalrun's session and exits at once: a wait
    that saw it would take it for the server."""
    found = []
    for proc in _marked(mark):
        with contextlib.suppress(ProcessLookupError):
            if os.getsid(proc.pid) == proc.pid:
                found.append(proc)
    return found


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def _assert_none_left(mark: str, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [(p.pid, _cmdline(p)) for p in _marked(mark)]
    assert left == [], f"processes left behind: {left}"


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _ctrl_c_reaches_it() -> None:
    """In the child before exec: Ctrl-C at its default, so Python turns it into KeyboardInterrupt. A shell's
    background job (a CI runner's `cmd &`) starts with SIGINT ignored, and an ignored signal stays ignored
    across exec: evalrun would never see the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _python_server(tmp_path: Path, script: str, mark: str, name: str = "fake", **server: Any) -> Path:
    """A config whose `server:` runs `script` with Python: an engine that misbehaves on purpose."""
    return _write(tmp_path / f"{name}.yaml", {
        "name": name, "runner": "openai", "model": "smollm2-135m",
        "server": {"command": [sys.executable, "-c", script, "{port}"], "env": {"EVALRUN_TEST_MARK": mark},
                   "version": "test", **server},
        "generation": {"max_new_tokens": 4}, "tasks": TASKS[:1]})


def _engine_config(tmp_path: Path, source: str, mark: str, name: str | None = None,
                   tasks: list[dict[str, Any]] | None = None, tokens: int = 8) -> Path:
    """A shipped engine config, with small packs, few tokens and the test's mark in its environment."""
    data = yaml.safe_load((ENGINE_CONFIGS / source).read_text())
    parent = data.pop("extends", None)
    if parent:
        base = yaml.safe_load((ENGINE_CONFIGS / parent).read_text())
        server = base["server"] | data.pop("server", {})
        data = base | data | {"server": server}
    data["server"]["env"] = data["server"].get("env", {}) | {"EVALRUN_TEST_MARK": mark}
    data["name"] = name or data["name"]
    data["tasks"] = tasks or TASKS
    data["generation"] = {"max_new_tokens": tokens}
    return _write(tmp_path / f"{data['name']}.yaml", data)


def _never_started(proc: subprocess.Popen[str]) -> str:
    """Why the test saw no server: evalrun's own output when it exited before starting one."""
    if proc.poll() is None:
        return "the server never started (evalrun still running)"
    stdout, stderr = proc.communicate()
    return f"the server never started: evalrun exited {proc.returncode} first:\n{stdout[-2000:]}{stderr[-3000:]}"


def _samples(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "samples.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []


def _run_dir(out: Path, name: str) -> Path:
    [found] = [d for d in out.iterdir() if d.name.startswith(f"{name}-")]
    return found


# -- no engine needed ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("server, path, words", [
    ({"command": ["engine", "--port", "8000"]}, "server", ["{port}"]),
    ({"command": ["engine", "--port", "{port}", "--model", "{weights}"]}, "server.command", ["{weights}", "{model_path}"]),
    ({"command": ["engine", "{port}"], "ready": "health"}, "server.ready", ["/health"]),
    ({"command": ["engine", "{port}"], "grace": -1}, "server.grace", ["greater than or equal"]),
    ({"command": ["engine", "{port}"], "flags": []}, "server.flags", ["unknown key"]),
    ({"command": []}, "server.command", ["at least 1"]),
])
def test_server_settings_are_validated_with_the_config(tmp_path: Path, server: dict, path: str,
                                                       words: list[str]) -> None:
    f = _write(tmp_path / "bad.yaml", {"name": "bad", "runner": "openai", "server": server, "tasks": TASKS[:1]})
    with pytest.raises(ConfigError) as info:
        load_config(f)
    message = str(info.value)
    assert str(f) in message and f"{path}:" in message, message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("over, path, words", [
    ({"openai": {"base_url": "http://127.0.0.1:8000/v1"}}, "openai.base_url", ["port it picks", "remove base_url"]),
    ({"runner": "hf"}, "server", ["only used with runner: openai"]),
    ({"openai": {"extra_body": {"temperature": 0.5}}}, "openai.extra_body", ["'temperature' is set by evalrun"]),
])
def test_server_conflicts_are_config_errors(tmp_path: Path, over: dict, path: str, words: list[str]) -> None:
    data = {"name": "bad", "runner": "openai", "server": {"command": ["engine", "{port}"]}, "tasks": TASKS[:1]} | over
    f = _write(tmp_path / "bad.yaml", data)
    with pytest.raises(ConfigError) as info:
        load_config(f)
    assert str(f) in str(info.value) and f"{path}:" in str(info.value), str(info.value)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_the_key_changes_with_any_flag_and_never_with_the_port(tmp_path: Path) -> None:
    """Prepared without launching anything: the command as written, its environment, the engine's version
    and the request's extra_body are the key; the port and the startup settings are not."""
    base = {"name": "k", "runner": "openai", "model": "smollm2-135m", "tasks": TASKS[:1],
            "server": {"command": [sys.executable, "-m", "engine", "--port", "{port}", "--type_k", "1"],
                       "version_command": [sys.executable, "-c", "print('engine 1.2.3')"]}}

    def key(**over: Any) -> str:
        data = json.loads(json.dumps(base))
        for k, v in over.items():
            if k == "extra_body":
                data["openai"] = {"extra_body": v}
            else:
                data["server"][k] = v
        prepared = prepare(load_config(_write(tmp_path / "k.yaml", data)), tmp_path / "runs")
        assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # nothing launched
        return prepared.key

    first = key()
    assert key(port=8123, startup_timeout=5, grace=1, ready="/health") == first
    variants = [key(command=[sys.executable, "-m", "engine", "--port", "{port}", "--type_k", "8"]),
                key(command=[sys.executable, "-m", "engine", "--port", "{port}", "--type_k", "1", "--flash_attn"]),
                key(env={"LLAMA_ARG": "1"}),
                key(version_command=[sys.executable, "-c", "print('engine 1.2.4')"]),
                key(extra_body={"repeat_penalty": 1.0})]
    assert len({first, *variants}) == 6, variants


@pytest.mark.slow
def test_a_server_that_never_becomes_ready_times_out_with_its_log(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    cfg = _python_server(tmp_path, "import sys, time; print('loading weights, slowly', flush=True); time.sleep(1000)",
                         mark, startup_timeout=2, grace=1)
    started = time.monotonic()
    done = run_cli("run", str(cfg), "--out", str(tmp_path / "runs"), timeout=120)
    assert done.returncode == 3, done.stdout + done.stderr
    assert time.monotonic() - started < 100  # the CLI and the tokenizer load in most of it, on 2 loaded cores
    err = " ".join(done.stderr.split())
    assert str(cfg) in err and "not ready after 2 s" in err and "loading weights, slowly" in err, err
    run_dir = _run_dir(tmp_path / "runs", "fake")
    assert "server.log" in err and (run_dir / "server.log").exists()
    assert _samples(run_dir) == []  # nothing stored as an answer
    _assert_none_left(mark)


@pytest.mark.slow
def test_a_server_that_exits_at_start_is_exit_3_naming_its_last_lines(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    cfg = _python_server(tmp_path, "import sys; print('error: unknown flag --type_q', flush=True); sys.exit(2)", mark)
    done = run_cli("run", str(cfg), "--out", str(tmp_path / "runs"), timeout=120)
    err = " ".join(done.stderr.split())
    assert done.returncode == 3, done.stdout + done.stderr
    assert str(cfg) in err and "exited with code 2 before it was ready" in err and "unknown flag --type_q" in err, err
    assert _samples(_run_dir(tmp_path / "runs", "fake")) == []


def test_a_missing_engine_is_a_config_error_before_anything_starts(tmp_path: Path) -> None:
    f = _write(tmp_path / "c.yaml", {"name": "c", "runner": "openai", "tasks": TASKS[:1],
                                     "server": {"command": ["no-such-engine-here/bin/python", "--port", "{port}"]}})
    with pytest.raises(ConfigError) as info:
        prepare(load_config(f), tmp_path / "runs")
    assert "server.command:" in str(info.value) and "make engines-llamacpp" in str(info.value)


def test_shipped_engine_configs_load_and_differ_in_their_flags() -> None:
    configs = {p.stem: load_config(p) for p in sorted(ENGINE_CONFIGS.glob("llamacpp-*.yaml"))}
    assert set(configs) == {"llamacpp-f16", "llamacpp-f16-fa", "llamacpp-q8kv", "llamacpp-q4kv"}
    commands = {name: tuple(c.server.command) for name, c in configs.items() if c.server}
    assert len(set(commands.values())) == 4
    assert all(c.openai and c.openai.extra_body.get("repeat_penalty") == 1.0 for c in configs.values())


# -- the real llama.cpp server -------------------------------------------------------------------------------


@pytest.mark.model
@pytest.mark.slow
@needs_engine
def test_start_ready_run_stop_and_reuse_without_launching(tmp_path: Path) -> None:
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    cfg = _engine_config(tmp_path, "llamacpp-f16.yaml", mark)
    done = run_cli("run", str(cfg), "--out", str(out), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    _assert_none_left(mark)
    run_dir = _run_dir(out, "llamacpp-f16")
    samples = _samples(run_dir)
    assert len(samples) == 4 and all(s["error"] is None and s["finish_reason"] for s in samples)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    launched = manifest["server"]["launched"]
    assert launched["ready_seconds"] > 0 and launched["launches"] == 1 and "{port}" in launched["command"]
    assert manifest["model"]["identity"]["server_launch"]["version"].startswith("llama-cpp-python 0.3")
    assert manifest["server"]["reported_model"]["id"] == "smollm2-135m"
    log = (run_dir / "server.log").read_text()
    assert log.count("=== evalrun") == 2 and "stopped" in log

    again = run_cli("run", str(cfg), "--out", str(out), timeout=600)
    assert again.returncode == 0 and "reused" in again.stdout, again.stdout + again.stderr
    assert (run_dir / "server.log").read_text() == log  # not launched again


@pytest.mark.model
@pytest.mark.slow
@needs_engine
def test_a_server_killed_mid_run_keeps_answers_and_the_same_command_resumes(tmp_path: Path) -> None:
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    tasks = [{"pack": "needle_numbers", "lengths": [512], "depths": [0.0, 1.0], "values": ["integer", "amount"]}]
    cfg = _engine_config(tmp_path, "llamacpp-f16.yaml", mark, tasks=tasks, tokens=24)
    args = [sys.executable, "-m", "evalrun.cli", "run", str(cfg), "--out", str(out)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_reaches_it)
    try:
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and proc.poll() is None:
            dirs = list(out.glob("llamacpp-f16-*")) if out.exists() else []
            if dirs and len(_samples(dirs[0])) >= 2:
                break
            time.sleep(0.05)
        servers = _launched(mark)
        assert servers and proc.poll() is None, "the run ended before the server could be killed"
        for server in servers:
            server.kill()
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = " ".join(stderr.split())
    assert proc.returncode == 3, stdout + stderr
    assert "exited with code -9 during the run" in err and "server.log" in err and "the same command resumes" in err
    run_dir = _run_dir(out, "llamacpp-f16")
    kept = _samples(run_dir)
    assert 2 <= len(kept) < 4 and all(s["error"] is None for s in kept)
    _assert_none_left(mark)

    again = run_cli("run", str(cfg), "--out", str(out), timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    final = _samples(run_dir)
    assert len(final) == 4 and len({s["item_id"] for s in final}) == 4  # nothing lost, nothing twice
    assert final[: len(kept)] == kept  # the stored answers are untouched
    _assert_none_left(mark)


@pytest.mark.model
@pytest.mark.slow
@needs_engine
def test_ctrl_c_leaves_no_process(tmp_path: Path) -> None:
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    cfg = _engine_config(tmp_path, "llamacpp-q4kv.yaml", mark)
    proc = subprocess.Popen([sys.executable, "-m", "evalrun.cli", "run", str(cfg), "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_reaches_it)
    try:
        deadline = time.monotonic() + 300
        while not _launched(mark) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert _launched(mark), _never_started(proc)
        time.sleep(1.0)  # loading its weights
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    _assert_none_left(mark)


@pytest.mark.model
@pytest.mark.slow
@needs_engine
def test_compare_launches_one_at_a_time_and_reuses_the_stored_baseline(tmp_path: Path) -> None:
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    tasks = [TASKS[0] | {"depths": [0.5]}]
    base = _engine_config(tmp_path, "llamacpp-f16.yaml", mark, tasks=tasks)
    cand = _engine_config(tmp_path, "llamacpp-q4kv.yaml", mark, tasks=tasks)
    seen: set[int] = set()
    report = tmp_path / "report.json"
    proc = subprocess.Popen([sys.executable, "-m", "evalrun.cli", "compare", str(base), str(cand), "--out", str(out),
                             "--json", str(report)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_reaches_it)
    at_once = 0
    while proc.poll() is None:
        live = _launched(mark)  # not the version asks
        at_once = max(at_once, len(live))
        seen |= {p.pid for p in live}
        time.sleep(0.05)
    stdout, stderr = proc.communicate()
    assert proc.returncode in (0, 1, 4), stdout + stderr  # one item a pack: a verdict or INCOMPLETE, never a crash
    assert at_once == 1 and len(seen) == 2, (at_once, seen)
    # the candidate's method is its engine and the flags that differ, not "none"
    assert "llama-cpp-python 0.3.36: --type_k 2 --type_v 2 --flash_attn true" in report.read_text()
    # and the engine's own log proves the flags took effect: a q4_0 cache beside the baseline's f16
    assert "engine: KV q4_0/q4_0, 4,096 tokens, 25.31 MiB, flash attention on (from log)" in report.read_text()
    base_kv = json.loads((_run_dir(out, "llamacpp-f16") / "manifest.json").read_text())["server"]["launched"]["kv"]
    assert (base_kv["k_type"], base_kv["v_type"], base_kv["flash_attn"]) == ("f16", "f16", False), base_kv
    _assert_none_left(mark)
    assert_served_logprobs(_run_dir(out, "llamacpp-f16"))
    base_log = (_run_dir(out, "llamacpp-f16") / "server.log").read_text()
    cand_dir = _run_dir(out, "llamacpp-q4kv")
    cand_dir.rename(cand_dir.with_name(cand_dir.name + ".aside"))  # the candidate runs again, the baseline not
    again = run_cli("compare", str(base), str(cand), "--out", str(out), timeout=600)
    assert again.returncode == proc.returncode, again.stdout + again.stderr
    assert "llamacpp-f16: reusing stored run" in " ".join(again.stderr.split())
    assert (_run_dir(out, "llamacpp-f16") / "server.log").read_text() == base_log
    _assert_none_left(mark)
    assert os.environ.get("EVALRUN_TEST_MARK") != mark


@pytest.mark.model
@pytest.mark.slow
@needs_engine
def test_keep_servers_leaves_the_server_up_and_says_where(tmp_path: Path) -> None:
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    cfg = _engine_config(tmp_path, "llamacpp-f16.yaml", mark, tasks=[TASKS[0] | {"depths": [0.5]}], tokens=4)
    done = run_cli("run", str(cfg), "--out", str(out), "--keep-servers", timeout=600)
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        err = " ".join(done.stderr.split())
        [server] = _launched(mark)
        assert "server left up at http://127.0.0.1:" in err and f"kill -TERM -- -{server.pid}" in err, err
        import httpx

        url = err.split("server left up at ", 1)[1].split(" ", 1)[0]
        assert httpx.get(f"{url}/models", timeout=10).json()["data"][0]["id"] == "smollm2-135m"
    finally:
        for proc in _marked(mark):  # each server leads its own process group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    _assert_none_left(mark)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_server_loads_leaves_no_process(tmp_path: Path, sig: signal.Signals) -> None:
    """Ctrl-C, or a CI job's SIGTERM, while evalrun waits for its server: exit 130 and the group is stopped."""
    mark = uuid.uuid4().hex
    cfg = _python_server(tmp_path, "import time; print('loading', flush=True); time.sleep(1000)", mark,
                         startup_timeout=300, grace=1)
    proc = subprocess.Popen([sys.executable, "-m", "evalrun.cli", "run", str(cfg), "--out", str(tmp_path / "runs")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_reaches_it)
    try:
        deadline = time.monotonic() + 120
        while not _launched(mark) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert _launched(mark), _never_started(proc)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    _assert_none_left(mark)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_during_the_spawn_waits_until_the_pid_is_owned(sig: signal.Signals) -> None:
    """A Ctrl-C or SIGTERM that lands inside `Popen()` would lose the server's pid (a session of its own that
    nothing stops): it is held through the spawn and delivered once, to the handler it would have reached."""
    from evalrun.runners.openai._server_process import _deliver, _handling

    reached: list[int] = []
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),  # a CI job may ignore it
                signal.SIGTERM: signal.signal(signal.SIGTERM, lambda signum, _frame: reached.append(signum))}
    try:
        held: list[int] = []
        with _handling(lambda signum, _frame: held.append(signum), signal.SIGINT, signal.SIGTERM):
            os.kill(os.getpid(), sig)
            time.sleep(0.05)  # Python runs the handler between bytecodes: nothing is raised in the spawn
        assert held == [sig]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handlers are put back
        if sig == signal.SIGINT:
            with pytest.raises(KeyboardInterrupt):
                _deliver(held)
        else:
            _deliver(held)
            assert reached == [signal.SIGTERM]
        _deliver(held)  # once only
        assert reached in ([], [signal.SIGTERM])

        # a spawn that fails has no pid to own: the held interrupt still ends the run, not the spawn's error
        with pytest.raises(KeyboardInterrupt):
            try:
                with _handling(lambda signum, _frame: held.append(signum), signal.SIGINT):
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.05)
                    raise OSError("cannot start")
            except OSError:
                _deliver(held)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
