"""Secrets a served config holds (its `server.env` values, its API key) reach no file and no report:
the manifest keeps each variable's name and a hash of its value, and an answer that echoes a secret
is stored masked and shown masked by every renderer (terminal, Markdown, JUnit, JSON, the HTML page
and its compressed item browser)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import run_cli
from tests.fakes.openai_server import OpenAITestServer, ScriptedBackend, ServerState, needle_answer

TOKEN = "hf_Qx7RtL2mVw9KpZ4sNc8BdJ6yHa3FgE1uTo"
KEY, KEY_ENV = "sk-echo-Vb83kQ1zLm0pWx7Rn", "EVALRUN_TEST_ECHOED_KEY"
TASKS = [{"pack": "needle_numbers", "lengths": [96], "depths": [0.0, 1.0], "values": ["integer"]}]
# an OpenAI server on the port evalrun gives it; the candidate's (ECHO set) answers with its HF_TOKEN
SERVER = """
import os, sys
from tests.fakes.openai_server import ScriptedBackend, ServerState, _Handler, _Server, needle_answer
echo = os.environ.get("ECHO") == "1"
answer = (lambda p: "I may not say, my token is " + os.environ["HF_TOKEN"]) if echo else needle_answer
httpd = _Server(("127.0.0.1", int(sys.argv[1])), _Handler)
httpd.state, httpd.backend = ServerState(), ScriptedBackend(answer, seconds_per_token=0.0)
httpd.serve_forever(poll_interval=0.05)
"""


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _blob_texts(html: str) -> str:
    """The item browser's texts (gzipped, base64) as JSON text: where each full answer is."""
    blob = re.search(r'<script type="text/plain" id="browser-texts">([A-Za-z0-9+/=]*)</script>', html)
    assert blob is not None, "the page has no item browser"
    return json.dumps(json.loads(gzip.decompress(base64.b64decode(blob.group(1)))), ensure_ascii=False)


def _compare(tmp_path: Path, base: Path, cand: Path, env: dict[str, str] | None = None) -> tuple[Any, dict[str, str]]:
    out = tmp_path / "out"
    reports = {"html": out / "r.html", "markdown": out / "r.md", "junit": out / "r.xml", "json": out / "r.json"}
    done = run_cli("compare", str(base), str(cand), "--out", str(out / "runs"), "--no-early-stop",
                   *[w for k, p in reports.items() for w in (f"--{k}", str(p))], env=env)
    assert done.returncode in (0, 1, 4), done.stdout + done.stderr
    shown = {k: p.read_text() for k, p in reports.items()} | {"terminal": done.stdout + done.stderr}
    shown["html browser"] = _blob_texts(shown["html"])
    return done, shown


def _assert_masked(tmp_path: Path, shown: dict[str, str], secret: str) -> None:
    """The secret in no file of the runs and reports (only the configs that hold it) nor in what was
    printed; the echoing answer shown masked in every renderer."""
    for f in (p for p in (tmp_path / "out").rglob("*") if p.is_file()):
        assert secret not in f.read_text(errors="replace"), f"{f} holds the secret"
    for where, text in shown.items():
        assert secret not in text, f"the {where} report shows the secret"
    # those that show a missing value's raw answer (Markdown and JUnit list rules, not answers)
    for where in ("json", "terminal", "html browser"):
        assert "***" in shown[where], f"the {where} report does not show the echoed answer masked"


@pytest.mark.slow
def test_server_env_is_kept_as_names_and_hashes_and_an_echoed_token_is_masked(tmp_path: Path, smol_dir: str) -> None:
    server = {"command": [sys.executable, "-c", SERVER, "{port}"], "env": {"HF_TOKEN": TOKEN}, "version": "test",
              "startup_timeout": 60, "grace": 2}
    common = {"runner": "openai", "model": "smollm2-135m", "generation": {"max_new_tokens": 16}, "tasks": TASKS}
    base = _write(tmp_path / "base.yaml", {"name": "base", **common, "server": server})
    cand = _write(tmp_path / "echo.yaml", {"name": "echo", **common,
                                            "server": server | {"env": {"HF_TOKEN": TOKEN, "ECHO": "1"}}})
    _, shown = _compare(tmp_path, base, cand)
    _assert_masked(tmp_path, shown, TOKEN)
    digest = "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest()
    for run in ("base", "echo"):
        manifest = json.loads(next((tmp_path / "out" / "runs").glob(f"{run}-*/manifest.json")).read_text())
        assert manifest["config"]["server"]["env"]["HF_TOKEN"] == digest
        assert manifest["model"]["identity"]["server_launch"]["env"]["HF_TOKEN"] == digest
    samples = next((tmp_path / "out" / "runs").glob("echo-*/samples.jsonl")).read_text()
    assert "my token is ***" in samples, "the stored answer is the echo, masked"


def test_an_answer_echoing_the_api_key_is_masked_in_every_report(tmp_path: Path, smol_dir: str) -> None:
    backend = ScriptedBackend(needle_answer, seconds_per_token=0.0)
    with OpenAITestServer(backend, ServerState(api_key=KEY)) as srv:
        common = {"runner": "openai", "model": "smollm2-135m", "generation": {"max_new_tokens": 16}, "tasks": TASKS,
                  "openai": {"base_url": srv.base_url, "api_key_env": KEY_ENV}}
        base = _write(tmp_path / "base.yaml", {"name": "base", **common, "engine": {"name": "vllm", "args": []}})
        cand = _write(tmp_path / "cand.yaml", {"name": "cand", **common,
                                               "engine": {"name": "vllm", "args": ["--kv-cache-dtype", "fp8"]}})
        # the baseline is stored first with honest answers; the candidate then meets the echoing answers
        done = run_cli("run", str(base), "--out", str(tmp_path / "out" / "runs"), env={KEY_ENV: KEY})
        assert done.returncode == 0, done.stdout + done.stderr
        backend.answer = lambda prompt: f"Authorization: Bearer {KEY}"
        _, shown = _compare(tmp_path, base, cand, env={KEY_ENV: KEY})
    _assert_masked(tmp_path, shown, KEY)
