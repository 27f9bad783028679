"""Two compared served configs whose runs have one key but reach different servers are said: what
differs between the servers is in neither key, so changing one server's flags later would reuse the
stored run of the old one."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.evals import api
from evalrun.evals.config import parse_config
from tests.fakes.openai_server import OpenAITestServer, ScriptedBackend, ServerState

KEY, KEY_ENV = "sk-shared-key-test-0001", "EVALRUN_TEST_SHARED_KEY"
TASKS = [{"pack": "needle_numbers", "lengths": [96], "depths": [1.0], "values": ["integer"]}]


def _config(name: str, url: str, engine: list[str] | None = None):  # type: ignore[no-untyped-def]
    data = {"name": name, "runner": "openai", "model": "smollm2-135m", "generation": {"max_new_tokens": 8},
            "openai": {"base_url": url, "api_key_env": KEY_ENV, "backoff": 0.05}, "tasks": TASKS}
    if engine is not None:
        data["engine"] = {"name": "vllm", "args": engine}
    return parse_config(data, f"{name}.yaml")


@pytest.mark.parametrize("engines, warned", [(None, True), ((["--kv-cache-dtype", "auto"], ["--kv-cache-dtype", "fp8"]), False)],
                         ids=["same key", "flags recorded"])
def test_configs_that_differ_only_by_url_are_warned_about(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          engines: tuple[list[str], list[str]] | None, warned: bool) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    lines: list[str] = []
    with OpenAITestServer(ScriptedBackend(seconds_per_token=0.0), ServerState(api_key=KEY)) as one, \
            OpenAITestServer(ScriptedBackend(seconds_per_token=0.0), ServerState(api_key=KEY)) as two:
        base = _config("baseline", one.base_url, engines[0] if engines else None)
        cand = _config("fp8kv", two.base_url, engines[1] if engines else None)
        report = api.compare(base, [cand], out=tmp_path / "runs", early_stop=False, log=lines.append)
    keys = {r.name: r.manifest.key for r in [report.baseline, *(c.run for c in report.candidates)]}
    said = [line for line in lines if line.startswith("WARNING: baseline and fp8kv have the same run key")]
    assert (keys["baseline"] == keys["fp8kv"]) == warned
    assert bool(said) == warned, lines
    if warned:
        assert one.base_url in said[0] and two.base_url in said[0] and "`engine:`" in said[0]
