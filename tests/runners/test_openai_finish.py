"""Served answers are what the engine finished: a stream cut without a finish_reason
(llama-cpp-python's interrupt_requests, an aborted request) is retried and, if it stays
cut, stored as the item's error, never as an empty answer; every answer stores its
finish_reason and `length` cut-offs are counted; a prompt past the served context is
that item's error (refused before sending when the context is known) and the run goes on.

Against the test server with the scripted backend: exact answers, no model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from typer.testing import CliRunner

from evalrun.cli import app
from evalrun.contract.types import Generation
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.evals.speed import effects_facts
from evalrun.runners.openai import context_refusal
from tests.fakes.openai_server import OpenAITestServer, ScriptedBackend, ServerState, needle_answer

TASKS = [{"pack": "needle_numbers", "lengths": [96, 200], "depths": [0.0, 0.5, 1.0], "values": ["integer"]}]
LONG = [{"pack": "needle_numbers", "lengths": [96, 400], "depths": [0.0, 1.0], "values": ["integer"]}]


def _config(base_url: str, tasks: list[dict[str, Any]] = TASKS, **openai: Any) -> dict[str, Any]:
    return {"name": "served", "runner": "openai", "model": "smollm2-135m",
            "openai": {"base_url": base_url, "backoff": 0.02, "max_backoff": 0.1, **openai},
            "generation": {"max_new_tokens": 16}, "tasks": tasks}


def _samples(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def _cli(tmp_path: Path, cfg: dict[str, Any]) -> tuple[Any, Path]:
    """`evalrun run` in this process (the server lives here too); the run's directory."""
    f = tmp_path / "served.yaml"
    f.write_text(json.dumps(cfg))
    out = tmp_path / "runs"
    res = CliRunner().invoke(app, ["run", str(f), "--out", str(out)], env={"COLUMNS": "200"})
    dirs = sorted(out.iterdir()) if out.exists() else []
    return res, dirs[0] if dirs else out


@pytest.fixture(scope="module")
def scripted(smol_dir: str) -> ScriptedBackend:  # smol_dir: the tokenizer the runner sizes prompts with
    return ScriptedBackend(seconds_per_token=0.05)


# -- cut answers -----------------------------------------------------------------------------------------


def test_interrupted_streams_are_errors_never_empty_answers(scripted: ScriptedBackend, tmp_path: Path) -> None:
    """llama-cpp-python at concurrency 2: each request ends the running stream with [DONE] and no
    finish_reason. Without retries every cut answer is an error naming the cause; none is stored as ''."""
    state = ServerState(interrupt_requests=True)
    with OpenAITestServer(scripted, state) as srv:
        res, run_dir = _cli(tmp_path, _config(srv.base_url, concurrency=2, max_retries=0))
    assert res.exit_code == 0, res.stdout + res.stderr
    lines = _samples(run_dir)
    cut = sum(r.interrupted for r in state.records)
    assert cut >= 1, "the server interrupted streams"
    errors = [g for g in lines if g["error"] is not None]
    assert len(errors) == cut, "one error per cut answer (no retry)"
    for g in errors:
        assert "[DONE] came without a finish_reason" in g["error"] and "interrupt_requests" in g["error"], g["error"]
        assert g["output"] is None and g.get("finish_reason") is None
    for g in lines:
        if g["error"] is None:
            assert g["output"] and g["finish_reason"] == "stop" and g["new_tokens"] > 0, g
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["items_error"] == cut and manifest["status"] == "complete"
    assert f"{cut} errors" in res.stdout and f"{cut} of 6 items are errors" in " ".join(res.stderr.split())


def test_interrupted_streams_are_retried_to_the_real_answer(scripted: ScriptedBackend, tmp_path: Path) -> None:
    state = ServerState(interrupt_requests=True)
    with OpenAITestServer(scripted, state) as srv:
        cfg = parse_config(_config(srv.base_url, concurrency=2, max_retries=20))
        result = execute(prepare(cfg, tmp_path), log=lambda _m: None)
    cut = sum(r.interrupted for r in state.records)
    assert cut >= 1
    by_id = {it.id: it for it in result.items}
    for item_id, gen in result.generations.items():
        assert gen.error is None and gen.finish_reason == "stop"
        assert gen.output == needle_answer(by_id[item_id].prompt), "the finished answer, not the cut one"
    assert result.manifest["server"]["retries"] == {"stream cut": cut}
    assert result.manifest["finish_reasons"] == {"stop": 6}


@pytest.mark.parametrize("stream", [True, False])
def test_an_unknown_finish_reason_is_a_cut_answer(scripted: ScriptedBackend, tmp_path: Path, stream: bool) -> None:
    """finish_reason "abort" (an engine that dropped the request) is retried, then the item's error."""
    state = ServerState(faults=["abort"], stream_supported=stream)
    with OpenAITestServer(scripted, state) as srv:
        cfg = parse_config(_config(srv.base_url, tasks=[TASKS[0] | {"lengths": [96], "depths": [0.0]}]))
        result = execute(prepare(cfg, tmp_path / "retried"), log=lambda _m: None)
        (gen,) = result.generations.values()
        assert gen.error is None and gen.output and gen.finish_reason == "stop"
        state.faults = ["abort"]
        two = [TASKS[0] | {"lengths": [96], "depths": [0.0, 1.0]}]
        cfg = parse_config(_config(srv.base_url, tasks=two, max_retries=0, concurrency=1))
        result = execute(prepare(cfg, tmp_path / "error"), log=lambda _m: None)
    errors = [g for g in result.generations.values() if g.error]
    assert len(errors) == 1 and errors[0].output is None and "finish_reason 'abort'" in (errors[0].error or "")
    assert result.manifest["items_error"] == 1


def test_length_cut_offs_are_stored_counted_and_shown(smol_dir: str, tmp_path: Path) -> None:
    chatty = ScriptedBackend(answer=lambda p: "The number is " + needle_answer(p) + " as the text says.",
                             seconds_per_token=0.0)
    with OpenAITestServer(chatty) as srv:
        cfg = _config(srv.base_url, concurrency=2) | {"generation": {"max_new_tokens": 3}}
        res, run_dir = _cli(tmp_path, cfg)
    assert res.exit_code == 0, res.stdout + res.stderr
    lines = _samples(run_dir)
    assert {g["finish_reason"] for g in lines} == {"length"} and all(g["output"] == "The number is" for g in lines)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["finish_reasons"] == {"length": 6}
    assert "6 of 6 answers cut at max_new_tokens" in effects_facts(manifest), "the speed table's run facts say it"
    assert "0 errors; 6 cut at max_new_tokens" in res.stdout, res.stdout
    assert "6 answers reached max_new_tokens (finish_reason length)" in " ".join(res.stderr.split()), res.stderr


def test_samples_stored_before_finish_reasons_still_read() -> None:
    old = {"item_id": "a", "pack": "p", "prompt_hash": "h", "output": "42", "new_tokens": 1, "seconds": 0.1}
    assert Generation.model_validate(old).finish_reason is None


# -- prompts past the served context ---------------------------------------------------------------------


@pytest.mark.parametrize("code, body, too_long", [
    (400, "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens", True),  # vLLM
    (400, '{"code": "context_length_exceeded"}', True),  # OpenAI
    (400, '{"message": "the request exceeds the available context size", "type": "exceed_context_size_error"}',
     True),  # llama.cpp server
    (400, "Requested tokens (5000) exceed context window of 4096", True),  # llama-cpp-python
    (400, "The input (5000 tokens) is longer than the model's context length (4096 tokens).", True),  # SGLang
    (422, "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096", True),  # TGI
    (400, "temperature must be <= 2", False),
    (400, "Unsupported parameter: 'ignore_eos'", False),
    (401, "maximum context length", False),
])
def test_context_refusals_are_told_from_other_400s(code: int, body: str, too_long: bool) -> None:
    assert context_refusal(code, body) is too_long


@pytest.mark.parametrize("refusal, attempts", [("400", 1), ("empty", 2)])
@pytest.mark.slow
def test_a_prompt_past_the_context_is_an_item_error_and_the_run_goes_on(
    scripted: ScriptedBackend, tmp_path: Path, refusal: str, attempts: int
) -> None:
    """vLLM's 400 context_length_exceeded (not retried) and llama-cpp-python's empty stream (retried
    once): the long items are errors, the others answered, and the same command then reuses the run."""
    state = ServerState(context_length=200, context_refusal=refusal, report_context=False)
    with OpenAITestServer(scripted, state) as srv:
        res, run_dir = _cli(tmp_path, _config(srv.base_url, tasks=LONG, concurrency=1))
        assert res.exit_code == 0, res.stdout + res.stderr
        lines = {g["item_id"]: g for g in _samples(run_dir)}
        long_ids = {k for k in lines if "/L400-" in k}
        assert len(lines) == 4 and len(long_ids) == 2
        for k, g in lines.items():
            if k in long_ids:
                assert g["error"] and g["output"] is None, g
                assert ("context_length_exceeded" in g["error"]) if refusal == "400" else ("stream empty" in g["error"])
            else:
                assert g["error"] is None and g["finish_reason"] == "stop"
        assert len(state.records) == 2 + 2 * attempts, "each long prompt sent `attempts` times, no more"
        again, _ = _cli(tmp_path, _config(srv.base_url, tasks=LONG, concurrency=1))
    assert again.exit_code == 0 and "reused" in again.stdout, again.stdout + again.stderr


@pytest.mark.parametrize("known", ["reported", "configured"])
def test_a_known_context_refuses_long_prompts_before_sending(
    scripted: ScriptedBackend, tmp_path: Path, known: str
) -> None:
    state = ServerState(context_length=200, report_context=known == "reported")
    with OpenAITestServer(scripted, state) as srv:
        extra = {"max_model_len": 200} if known == "configured" else {}
        cfg = parse_config(_config(srv.base_url, tasks=LONG, **extra))
        result = execute(prepare(cfg, tmp_path), log=lambda _m: None)
    refused = {k: g for k, g in result.generations.items() if g.error}
    assert sorted(refused) == sorted(k for k in result.generations if "/L400-" in k)
    for g in refused.values():
        assert "refused before sending" in (g.error or "") and "served context of 200 tokens" in (g.error or "")
        assert g.prompt_tokens > 200
    assert len(state.records) == 2 and all(r.status == 200 for r in state.records), "long prompts never sent"
    assert result.manifest["server"]["context"]["tokens"] == 200
    assert result.manifest["items_error"] == 2


def test_check_flags_prompts_past_the_context_the_server_reports(scripted: ScriptedBackend, tmp_path: Path) -> None:
    """`check` sizes prompts against the served context where the server says it (vLLM's /models
    max_model_len here), as it does against a local model's, and marks a pack whose prompts cannot fit."""
    with OpenAITestServer(scripted, ServerState(context_length=200, report_context=True)) as srv:
        f = tmp_path / "served.yaml"
        f.write_text(json.dumps(_config(srv.base_url, tasks=LONG)))
        res = CliRunner().invoke(app, ["check", str(f), "--out", str(tmp_path / "runs")], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.stdout
    flat = " ".join(res.stdout.split())
    assert "context 200 tokens: prompts up to 184 beside max_new_tokens 16" in flat, flat
    assert "(over 184)" in flat


@pytest.mark.parametrize("listing", ["absent", "wrong path"])
def test_check_refuses_a_base_url_the_models_endpoint_denies(scripted: ScriptedBackend, tmp_path: Path,
                                                               listing: str) -> None:
    """A run accepts a server without GET /models (its answers' `model` is recorded), but `check` is the
    preflight: a 404 there almost always means a base URL without /v1, so it is exit 2 naming the key."""
    with OpenAITestServer(scripted, ServerState(list_models=listing == "wrong path")) as srv:
        f = tmp_path / "served.yaml"
        f.write_text(json.dumps(_config(srv.base_url.replace("/v1", "/api") if listing == "wrong path" else srv.base_url)))
        res = CliRunner().invoke(app, ["check", str(f), "--out", str(tmp_path / "runs")], env={"COLUMNS": "200"})
    assert res.exit_code == 2, res.stdout
    said = "".join((res.stdout + res.stderr).split())  # rich wraps long paths anywhere
    assert f"{f}:openai.base_url:" in said and "answered404" in said and "/v1" in said, said
