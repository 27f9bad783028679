"""Served values that are not log-probabilities (positive, NaN, infinite) are never read as figures:
a teacher-forced read through a real HTTP server that sends one stops, naming the item and the
token (a positive value would read as zero drift), and a served baseline answer holding one gets
no record, saying why. A value a rounding above 0 is read as 0."""

from __future__ import annotations

import json
import math
from typing import Any, Callable

import pytest

from evalrun.runners.logprobs import TokenDists
from evalrun.runners.openai._logprobs import ServedDists, TokenIds, token_dists, tokens_of
from tests.fakes.openai_server import OpenAITestServer, ServerState
from tests.runners.test_served_forcing import RECORDED, _CountingBackend, _read, _served_runner


@pytest.fixture(scope="module")
def tok(smol_dir: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smol_dir)


@pytest.fixture(scope="module")
def recorded(tok: Any) -> tuple[dict[str, Any], TokenDists]:
    data = json.loads(RECORDED.read_text())
    base, why = token_dists(tokens_of(data["generation_choice"], "completions") or [], TokenIds.of(tok), 20)
    assert base is not None, why
    return data, base


def _vllm(data: dict[str, Any], base: TokenDists, bad: tuple[int, float] | None) -> Callable[[dict[str, Any]], list[Any]]:
    """vLLM's prompt_logprobs for the request's prompt: None, one entry per prompt token, then the recorded
    read of the answer; `bad`: (answer token, value) given to that token's own logprob."""
    answer = data["prompt_logprobs"][data["prompt_len"]:]

    def reply(body: dict[str, Any]) -> list[Any]:
        prompt = body["prompt"][:len(body["prompt"]) - len(answer)]
        entries = json.loads(json.dumps(answer))
        if bad is not None:
            entries[bad[0]][str(int(base.ids[bad[0]]))]["logprob"] = bad[1]
        return [None, *({str(i): {"logprob": -0.5, "rank": 1}} for i in prompt[1:]), *entries]

    return reply


@pytest.mark.slow  # a server, a tokenizer and the items built: 1-3 s
@pytest.mark.parametrize("bad", [None, (3, 3e-7), (3, 0.7), (5, math.nan), (0, -math.inf)],
                         ids=["as recorded", "a rounding above 0", "positive", "NaN", "-inf"])
def test_a_forced_read_with_a_value_that_is_no_logprob_stops_naming_item_and_token(
        bad: tuple[int, float] | None, recorded: tuple[dict[str, Any], TokenDists], tok: Any, tmp_path: Any) -> None:
    """Through the runner and the test server (vLLM's wire form): the recorded read gives a record; the
    same with one answer token's logprob above 0 (a probability > 1), NaN or -inf gives none, and the
    read stops with a reason naming the item and the token, the one line the report and the gate show."""
    data, base = recorded
    state = ServerState(prompt_logprobs=_vllm(data, base, bad))
    with OpenAITestServer(_CountingBackend(tok), state) as srv:
        prepared = _served_runner(srv.base_url, tmp_path)
        got = _read(prepared, base)
    [item] = prepared.items
    problem = prepared.runner.forcing.forced_problem
    if bad is None or 0 < bad[1] <= 1e-4:
        assert got == [item.id] and problem is None and prepared.runner.forcing.forced_skipped == []
        return
    assert got == []
    assert problem is not None and problem.startswith(f"item {item.id}: answer token {bad[0]} (id {int(base.ids[bad[0]])})")
    assert f"logprob {bad[1]!r} is not a log-probability" in problem


def _entry(text: str, lp: float, top: list[tuple[str, float]]) -> dict[str, Any]:
    return {"token": text, "logprob": lp, "top_logprobs": [{"token": t, "logprob": v} for t, v in top]}


@pytest.mark.parametrize("where", ["own", "alternative"])
@pytest.mark.parametrize("value", [0.5, math.nan, math.inf])
def test_a_served_baseline_answer_with_a_value_that_is_no_logprob_gets_no_record(
        tok: Any, where: str, value: float) -> None:
    """The baseline's side, the same check: the answer is stored without a record, counted, and why names
    the item, the token and the value."""
    served = ServedDists(tok)
    served.top_k, served.on_distribution = 20, lambda _i, _r: None
    own, alt = (value, -2.0) if where == "own" else (-0.1, value)
    content = [_entry(" yes", -0.1, [(" yes", -0.1), (" no", -2.0)]), _entry(".", own, [(".", -0.1), ("!", alt)])]
    assert served.take("a", tokens_of({"logprobs": {"content": content}}, "chat"), " yes.") is None
    facts = served.facts()
    assert facts["answers_without"] == 1 and facts["first_without"].startswith("item a: token 1 (b'.')")
    assert f"logprob {value!r} is not a log-probability" in facts["first_without"]


def test_a_rounding_above_0_is_read_as_0(tok: Any) -> None:
    content = [_entry(" yes", 2e-6, [(" yes", 2e-6), (" no", -9.0)])]
    record, why = token_dists(tokens_of({"logprobs": {"content": content}}, "chat") or [], TokenIds.of(tok), 20)
    assert why is None and record is not None
    assert record.logprob.tolist() == [0.0] and record.top_logprobs[0, 0] == 0.0
