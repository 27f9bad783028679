"""The `openai` runner against a real HTTP server on loopback that speaks the
OpenAI protocol (SSE streaming included) and answers with the real default
model through the `hf` runner: same answers as the hf runner, bounded
concurrency seen by the server, faults retried with nothing lost or doubled,
a refused key stopping the run with exit 3 and resuming cleanly, the key in
no file, and `evalrun compare` on two servers."""

from __future__ import annotations

import json
import random
import statistics
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from typer.testing import CliRunner

from evalrun.evals import api
from evalrun.cli import app
from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config, parse_config
from evalrun.evals.run import RunFailed, execute, key_payload, prepare
from evalrun.evals.store import run_key
from evalrun.runners.models import ModelSource
from evalrun.runners.openai import backoff_seconds, retry_after_seconds, retry_wait
from tests.conftest import CONFIGS, run_cli, write_config
from tests.fakes.openai_server import HFBackend, OpenAITestServer, ServerState

KEY = "sk-evalrun-test-9f8e7d6c5b4a"
KEY_ENV = "EVALRUN_TEST_OPENAI_KEY"
TASKS = [{"pack": "needle_numbers", "lengths": [96, 200], "depths": [0.0, 1.0], "values": ["integer"]}]
GENERATION = {"max_new_tokens": 8}


def _openai_config(base_url: str, name: str = "served", **openai: Any) -> dict[str, Any]:
    return {
        "name": name,
        "runner": "openai",
        "model": "smollm2-135m",
        "openai": {"base_url": base_url, "api_key_env": KEY_ENV, "backoff": 0.05, **openai},
        "generation": GENERATION,
        "tasks": TASKS,
    }


def _files_under(path: Path) -> Iterator[Path]:
    return (p for p in path.rglob("*") if p.is_file())


def _assert_key_nowhere(path: Path) -> None:
    for f in _files_under(path):
        assert KEY.encode() not in f.read_bytes(), f"the API key leaked into {f}"


# -- no model, no server ---------------------------------------------------------------------------------


def test_retry_after_and_backoff() -> None:
    assert retry_after_seconds("2") == 2.0
    assert retry_after_seconds("1.5") == 1.5
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:05 GMT", now=1445412480.0) == pytest.approx(5.0)
    assert retry_after_seconds("999999") == 300.0  # a server asking for days is capped
    rng = random.Random(1)
    waits = [backoff_seconds(a, 0.5, 30.0, rng) for a in range(8)]
    for attempt, wait in enumerate(waits):
        span = min(30.0, 0.5 * 2**attempt)
        assert span / 2 <= wait <= span
    assert len({round(w, 6) for w in waits}) == len(waits), "jitter: waits are not in lockstep"
    assert retry_wait(0, 0.05, 30.0, 2.0, rng) >= 2.0, "Retry-After is a floor under the backoff"


def test_run_sync_works_inside_a_running_event_loop() -> None:
    import asyncio

    from evalrun.runners.openai import run_sync

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def notebook_cell() -> int:  # a caller that already runs a loop (Jupyter)
        return run_sync(answer())

    assert run_sync(answer()) == 42 and asyncio.run(notebook_cell()) == 42


def test_sse_parser_joins_data_lines_and_skips_comments() -> None:
    import asyncio

    from evalrun.runners.openai import sse_data

    async def lines() -> Any:
        for line in [": keep-alive", "data: {\"a\":", "data: 1}", "", "event: x", "data:[DONE]", ""]:
            yield line

    async def collect() -> list[str]:
        return [d async for d in sse_data(lines())]

    assert asyncio.run(collect()) == ["{\"a\":\n1}", "[DONE]"]


@pytest.mark.parametrize(
    "over, path, words",
    [
        ({"openai": None}, "openai", ["needs an `openai:` mapping", "base_url"]),
        ({"openai": {"base_url": "localhost:8000"}}, "openai.base_url", ["http(s) URL"]),
        ({"openai": {"base_url": "http://u:pw@h:1/v1"}}, "openai.base_url", ["credentials", "api_key_env"]),
        ({"openai": {"base_url": "http://h:1/v1", "endpoint": "responses"}}, "openai.endpoint", ["allowed", "chat"]),
        ({"openai": {"base_url": "http://h:1/v1", "concurrency": 0}}, "openai.concurrency", ["greater than"]),
        ({"openai": {"base_url": "http://h:1/v1", "api_key": "sk-x"}}, "openai.api_key", ["unknown key", "api_key_env"]),
        ({"openai": {"base_url": "http://h:1/v1", "api_key_env": "MY KEY"}}, "openai.api_key_env", ["pattern"]),
        ({"acceleration": {"kv_cache": {"quant": "int4"}}}, "acceleration", ["engine applies them", "engine:"]),
        ({"engine": {"name": "vllm", "flags": []}}, "engine.flags", ["unknown key", "args"]),
        ({"runner": "hf"}, "openai", ["only used with runner: openai"]),
    ],
)
def test_bad_openai_settings_name_file_and_key(cfg_file, over: dict, path: str, words: list[str]) -> None:
    import yaml

    data = _openai_config("http://127.0.0.1:9/v1") | over
    f = cfg_file("bad.yaml", yaml.safe_dump({k: v for k, v in data.items() if v is not None}))
    with pytest.raises(ConfigError) as info:
        load_config(f)
    message = str(info.value)
    assert str(f) in message and f"{path}:" in message, message
    for word in words:
        assert word in message, message


def test_cache_key_has_engine_identity_but_not_where_or_how_fast() -> None:
    def key(server: dict | None = None, **over: Any) -> str:
        data = _openai_config("http://10.0.0.1:8000/v1")
        for k, v in over.items():
            data = data | {k: v} if k != "openai" else data | {"openai": data["openai"] | v}
        cfg = parse_config(data)
        source = ModelSource("smollm2-135m", "openai", cfg.openai.base_url,
                             {"served_model": cfg.model, "server_reported": server, "tokenizer": {"t": 1}})
        return run_key(key_payload(cfg, source, "remote", "server"))

    base = key(engine={"name": "vllm", "args": []})
    assert key(engine={"name": "vllm", "args": ["--kv-cache-dtype", "fp8"]}) != base
    assert key(engine={"name": "vllm", "args": []}, openai={"endpoint": "completions"}) != base
    assert key(server={"id": "smollm2-135m", "root": "/models/other"}, engine={"name": "vllm", "args": []}) != base
    same = key(engine={"name": "vllm", "args": []},
               openai={"base_url": "http://10.0.0.2:9000/v1", "concurrency": 64, "timeout": 5, "max_retries": 0,
                       "api_key_env": "OTHER"})
    assert same == base, "where the server lives, its key and the client's pacing change no output"


def test_example_openai_configs_load() -> None:
    base = load_config(CONFIGS / "openai-baseline.yaml")
    fp8 = load_config(CONFIGS / "openai-fp8kv.yaml")
    assert base.runner == fp8.runner == "openai"
    assert fp8.engine is not None and "fp8" in " ".join(fp8.engine.args)
    assert fp8.tasks_dump() == base.tasks_dump() and fp8.generation == base.generation
    assert fp8.openai.base_url != base.openai.base_url


# -- the real model behind a real server ----------------------------------------------------------------

model = pytest.mark.model


@pytest.fixture(scope="module")
def backend(smol_dir: str) -> Iterator[HFBackend]:
    """The default model behind the test servers; one CPU thread, so queued requests do not fight over cores."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield HFBackend()
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def reference(backend: HFBackend, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The hf runner's answers to the same items, greedy, one item per call."""
    cfg = parse_config({"name": "hf-ref", "batch_size": 1, "generation": GENERATION, "tasks": TASKS})
    result = api.run(cfg, out=tmp_path_factory.mktemp("ref"), log=lambda _m: None)
    return {k: g for k, g in result.generations.items()}


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


@model
def test_streamed_answers_equal_the_hf_runner_with_bounded_concurrency(
    backend: HFBackend, reference: dict, key_env: None, tmp_path: Path
) -> None:
    with OpenAITestServer(backend, ServerState(api_key=KEY)) as srv:
        cfg = parse_config(_openai_config(srv.base_url, concurrency=3, timeout=60))
        result = execute(prepare(cfg, tmp_path), log=lambda _m: None)
    assert {k: g.output for k, g in result.generations.items()} == {k: g.output for k, g in reference.items()}
    assert srv.state.max_in_flight == 3, "three requests at once, never more"
    for item_id, gen in result.generations.items():
        ref = reference[item_id]
        assert gen.new_tokens == ref.new_tokens and gen.prompt_tokens == ref.prompt_tokens  # from `usage`
        assert gen.prefill_seconds is not None and 0 < gen.prefill_seconds <= gen.seconds
        assert gen.decode_seconds is not None and gen.decode_seconds >= 0 and gen.batch_size == 1
    server = result.manifest["server"]
    assert server["reported_model"]["root"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert server["response_models"] == ["smollm2-135m"] and server["streamed"] == 4
    assert server["retries"] == {} and server["requests"] == 5  # /models, then one per item
    assert result.manifest["model"]["identity"]["server_reported"]["id"] == "smollm2-135m"
    _assert_key_nowhere(tmp_path)


@model
def test_completions_endpoint_renders_the_chat_template_here(
    backend: HFBackend, reference: dict, key_env: None, tmp_path: Path
) -> None:
    state = ServerState(api_key=KEY)
    with OpenAITestServer(backend, state) as srv:
        cfg = parse_config(_openai_config(srv.base_url, endpoint="completions", concurrency=2))
        result = execute(prepare(cfg, tmp_path, limit=2), log=lambda _m: None)
    assert len(result.generations) == 2
    assert all(g.output == reference[k].output and g.prefill_seconds for k, g in result.generations.items())
    assert [r.path for r in state.records] == ["/v1/completions"] * 2


@model
def test_falls_back_when_the_server_does_not_stream(
    backend: HFBackend, reference: dict, key_env: None, tmp_path: Path
) -> None:
    state = ServerState(api_key=KEY, stream_supported=False, list_models=False)
    with OpenAITestServer(backend, state) as srv:
        result = execute(prepare(parse_config(_openai_config(srv.base_url)), tmp_path, limit=1), log=lambda _m: None)
    ((item_id, gen),) = result.generations.items()
    assert gen.output == reference[item_id].output and gen.new_tokens == reference[item_id].new_tokens
    assert gen.prefill_seconds is None and gen.seconds > 0, "no stream, no time to first token"
    server = result.manifest["server"]
    assert (server["not_streamed"], server["streamed"]) == (1, 0)
    assert server["reported_model"] is None and server["response_models"] == ["smollm2-135m"]


@model
def test_faults_are_retried_and_no_item_is_lost_or_duplicated(
    backend: HFBackend, reference: dict, key_env: None, tmp_path: Path
) -> None:
    faults = ["500", "429", "drop", "slow", "503"]
    state = ServerState(api_key=KEY, faults=list(faults), retry_after=1, slow_seconds=5.0)
    with OpenAITestServer(backend, state) as srv:
        cfg = parse_config(_openai_config(srv.base_url, concurrency=2, timeout=4.0, max_retries=4))  # a prefill on a busy core stays well inside 4 s
        result = execute(prepare(cfg, tmp_path), log=lambda _m: None)
    lines = [json.loads(line) for line in (result.dir / "samples.jsonl").read_text().splitlines()]
    assert sorted(g["item_id"] for g in lines) == sorted(reference), "every item exactly once"
    assert {g["item_id"]: g["output"] for g in lines} == {k: g.output for k, g in reference.items()}
    retries = result.manifest["server"]["retries"]
    # one retry per injected fault (queued requests get SSE keep-alives, so only the slow one times out)
    dropped = retries.get("connection", 0) + retries.get("stream cut", 0)
    assert (retries.get("HTTP 500"), retries.get("HTTP 503"), retries.get("HTTP 429"), retries.get("timeout"),
            dropped) == (1, 1, 1, 1, 1), retries
    assert result.manifest["server"]["requests"] == 1 + len(lines) + sum(retries.values())
    # the 429 said "come back in 1 s": the same prompt did not come back sooner
    limited = next(r for r in state.records if r.fault == "429")
    again = next(r for r in state.records if r.key == limited.key and r.arrived > limited.arrived)
    assert again.arrived - limited.finished >= 0.95
    assert len(state.completed()) == len(lines), "no answer was fetched twice"
    print(f"\nretries observed: {retries}")
    _assert_key_nowhere(tmp_path)


@model
def test_refused_key_stops_with_exit_3_keeps_answers_and_resumes(
    backend: HFBackend, reference: dict, key_env: None, tmp_path: Path
) -> None:
    out = tmp_path / "runs"
    state = ServerState(api_key=KEY, revoke_after=2)
    with OpenAITestServer(backend, state) as srv:
        cfg = write_config(tmp_path / "served.yaml", json.dumps(_openai_config(srv.base_url, concurrency=1)))
        # the CLI in process (the server lives in this process too); the compare test below runs it as a subprocess
        first = CliRunner().invoke(app, ["run", str(cfg), "--out", str(out)], env={KEY_ENV: KEY, "COLUMNS": "200"})
        assert first.exit_code == 3, first.stdout + first.stderr
        assert "401" in first.stderr and KEY_ENV in first.stderr and "Traceback" not in first.stderr
        assert "2 of 4 items are stored; the same command resumes" in " ".join(first.stderr.split()), first.stderr
        assert KEY not in first.stdout + first.stderr
        (run_dir,) = out.iterdir()
        kept = [json.loads(line)["item_id"] for line in (run_dir / "samples.jsonl").read_text().splitlines()]
        assert len(kept) == 2
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["status"] == "failed" and "401" in manifest["failure"]
        answered = {r.key for r in state.completed()}

        state.revoke_after = None  # the key is valid again: the same command resumes (here through the API)
        before = len(state.records)
        logged: list[str] = []
        api.run(load_config(cfg), out=out, log=logged.append)
        assert any("resuming" in m and "2 of 4 items stored" in m for m in logged), logged
    resent = [r for r in state.records[before:]]
    assert len(resent) == len(reference) - 2 and not {r.key for r in resent} & answered, "completed items not re-sent"
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["item_id"] for line in lines) == sorted(reference)
    final = json.loads((run_dir / "manifest.json").read_text())
    assert final["status"] == "complete"
    # the server's counts add up over the sessions: the resumed run reports the first session's requests too
    assert final["server"]["sessions"] == 2 and manifest["server"]["sessions"] == 1
    assert final["server"]["requests"] >= manifest["server"]["requests"] + len(resent)
    assert final["server"]["retries"].keys() >= manifest["server"]["retries"].keys()
    _assert_key_nowhere(tmp_path)


@model
def test_wrong_key_fails_before_any_work(backend: HFBackend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    with OpenAITestServer(backend, ServerState(api_key=KEY)) as srv:
        with pytest.raises(RunFailed, match=r"401 Unauthorized.*\$" + KEY_ENV):
            api.run(parse_config(_openai_config(srv.base_url)), out=tmp_path, log=lambda _m: None)
        monkeypatch.delenv(KEY_ENV)
        with pytest.raises(ConfigError, match=f"openai.api_key_env: environment variable {KEY_ENV} is not set"):
            api.run(parse_config(_openai_config(srv.base_url)), out=tmp_path, log=lambda _m: None)
        other = _openai_config(srv.base_url) | {"model": "llama-70b"}
        other["openai"] = other["openai"] | {"tokenizer": "smollm2-135m"}
        monkeypatch.setenv(KEY_ENV, KEY)
        with pytest.raises(RunFailed, match="does not serve model 'llama-70b'; it serves 'smollm2-135m'"):
            api.run(parse_config(other), out=tmp_path, log=lambda _m: None)
    assert not srv.state.records, "no generation request was sent"


@model
def test_compare_two_openai_configs_on_two_servers(backend: HFBackend, key_env: None, tmp_path: Path) -> None:
    import yaml

    with OpenAITestServer(backend, ServerState(api_key=KEY)) as base_srv, \
            OpenAITestServer(backend, ServerState(api_key=KEY)) as cand_srv:
        # one needle and an answer long enough to reach it, so the comparison scores a real value
        base = _openai_config(base_srv.base_url, name="baseline", concurrency=2) | {
            "generation": {"max_new_tokens": 20}, "engine": {"name": "vllm", "args": ["--max-model-len", "8192"]},
            "tasks": [TASKS[0] | {"lengths": [96], "depths": [1.0]}]}
        base_file = write_config(tmp_path / "baseline.yaml", yaml.safe_dump(base))
        cand_file = write_config(tmp_path / "fp8kv.yaml", yaml.safe_dump({
            "extends": "baseline.yaml", "name": "fp8kv", "openai": {"base_url": cand_srv.base_url},
            "engine": {"args": ["--max-model-len", "8192", "--kv-cache-dtype", "fp8"]}}))
        started = time.perf_counter()
        res = run_cli("compare", str(base_file), str(cand_file), "--out", str(tmp_path / "runs"),
                      "--json", str(tmp_path / "c.json"), env={KEY_ENV: KEY}, timeout=300)
        seconds = time.perf_counter() - started
    assert res.returncode == 0, res.stdout + res.stderr
    assert "fp8kv PASS" in res.stdout and "Traceback" not in res.stderr
    assert len(base_srv.state.completed()) == 1 and len(cand_srv.state.completed()) == 1, "each server ran its own"
    (pack,) = json.loads((tmp_path / "c.json").read_text())["comparisons"][0]["packs"]
    assert pack["items"] == 1 and pack["identical_outputs"] == 1, "one model behind both servers: the same answer"
    assert pack["baseline_accuracy"] == 1.0, "the needle was found: a real answer was scored"
    manifests = {m["name"]: m for m in (json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/manifest.json"))}
    assert manifests["baseline"]["key"] != manifests["fp8kv"]["key"], "engine flags are part of the key"
    assert manifests["fp8kv"]["config"]["engine"]["args"][-1] == "fp8"
    assert "TTFT" in res.stdout, "the speed-accuracy table shows time to first token"
    for name in ("baseline", "fp8kv"):
        speed = manifests[name]["speed"]
        assert speed["ttft"]["p50"] > 0 and speed["tpot"]["n"] == 1 and speed["itl"]["n"] > 0
        assert speed["throughput_basis"].startswith("wall clock") and "streamed text chunk" in speed["clock"]
        assert speed["peak_memory"] is None, "the client's memory says nothing about the server"
    figures = {}
    for name in ("baseline", "fp8kv"):
        run_dir = next((tmp_path / "runs").glob(f"{name}-*"))
        gens = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
        ttft = [g["prefill_seconds"] for g in gens]
        assert all(t is not None and t > 0 for t in ttft)
        tps = sum(g["new_tokens"] for g in gens) / sum(g["seconds"] for g in gens)
        figures[name] = f"TTFT p50 {statistics.median(ttft) * 1000:.0f} ms, {tps:.1f} tokens/s"
    print(f"\ncompare of two openai configs in {seconds:.1f} s: {figures}")
    _assert_key_nowhere(tmp_path)
