"""The served engine's own timings: vLLM's /metrics histograms differenced around a run (absent metrics,
another version's names, counters reset by a relaunch), llama.cpp's per-answer `timings`, a resumed run's
sessions adding up in the manifest, a real HTTP /metrics that records a request late, and the speed
table's cells and note. No model: all cheap."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, AsyncIterator, Iterator

import pytest

from evalrun.evals.run._manifest import runner_extras
from evalrun.evals.speed import ServerTimings, SpeedRow
from evalrun.evals.speed._served import note, server_timings
from evalrun.reports.text import units
from evalrun.runners.base import Runner
from evalrun.runners.openai._answer import read_json, read_stream
from evalrun.runners.openai._engine_timings import (
    LLAMA_SOURCE, NO_TIMINGS, VLLM_SOURCE, EngineTimings, combine, histograms, llama_timings, record, vllm_delta,
)
from tests.fakes.openai_server import OpenAITestServer, ServerState


def exposition(ttft: tuple[float, int], e2e: tuple[float, int] | None = None,
               tpot_name: str = "vllm:request_time_per_output_token_seconds", tpot: tuple[float, int] = (0.0, 0)) -> str:
    """vLLM-shaped Prometheus text: histograms labelled by model and engine (two engines: summed), with a
    counter and a gauge around them that are not histograms."""
    out = ["# HELP vllm:num_requests_running Number of requests in model execution batches.",
           "# TYPE vllm:num_requests_running gauge",
           'vllm:num_requests_running{engine="0",model_name="smollm2-135m"} 0.0',
           "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
           "# TYPE vllm:prompt_tokens_total counter",
           'vllm:prompt_tokens_total{engine="0",model_name="smollm2-135m"} 1234.0']

    def hist(name: str, total: float, count: int) -> None:
        out.extend([f"# HELP {name} a histogram", f"# TYPE {name} histogram"])
        for engine, share in (("0", 0.75), ("1", 0.25)):
            part = round(count * share)
            labels = f'engine="{engine}",model_name="smollm2-135m"'
            out.extend([f'{name}_bucket{{{labels},le="0.1"}} {float(part)}',
                        f'{name}_bucket{{{labels},le="+Inf"}} {float(part)}',
                        f"{name}_count{{{labels}}} {float(part)}",
                        f"{name}_sum{{{labels}}} {total * share}"])

    hist("vllm:time_to_first_token_seconds", *ttft)
    if e2e is not None:
        hist("vllm:e2e_request_latency_seconds", *e2e)
    hist(tpot_name, *tpot)
    return "\n".join(out) + "\n"


def test_histograms_sum_every_label_set_and_ignore_other_types_and_garbage() -> None:
    found = histograms(exposition((2.0, 4), (8.0, 4)))
    assert found["vllm:time_to_first_token_seconds"] == pytest.approx((2.0, 4.0))
    assert found["vllm:e2e_request_latency_seconds"] == pytest.approx((8.0, 4.0))
    assert "vllm:prompt_tokens_total" not in found and "vllm:num_requests_running" not in found
    assert histograms("<html><body>404 Not Found</body></html>") == {}
    assert histograms("") == {}


def test_delta_between_scrapes_with_absent_metrics_and_another_versions_names() -> None:
    before = histograms(exposition((1.0, 4)))  # no e2e histogram exported yet: it counts from zero
    after = histograms(exposition((1.6, 8), (4.0, 4), tpot_name="vllm:time_per_output_token_seconds", tpot=(0.2, 20)))
    delta, resets = vllm_delta(before, after)
    assert resets == 0
    assert delta["ttft"] == pytest.approx({"sum": 0.6, "count": 4.0})
    assert delta["e2e"] == pytest.approx({"sum": 4.0, "count": 4.0})
    assert delta["tpot"] == pytest.approx({"sum": 0.2, "count": 20.0})  # the older name, where the newer is absent
    assert "itl" not in delta and "prefill" not in delta  # not exported: not a zero


def test_a_counter_reset_by_a_relaunch_takes_what_it_counted_since() -> None:
    before = histograms(exposition((5.0, 40), (50.0, 40)))
    after = histograms(exposition((0.3, 4), (2.0, 4)))  # relaunched: counting from zero again
    delta, resets = vllm_delta(before, after)
    assert resets == 2
    assert delta["ttft"] == pytest.approx({"sum": 0.3, "count": 4.0})
    assert delta["e2e"] == pytest.approx({"sum": 2.0, "count": 4.0})


def test_llama_cpp_timings_in_the_documented_shape() -> None:
    timings = {"prompt_n": 120, "prompt_ms": 240.0, "prompt_per_token_ms": 2.0, "prompt_per_second": 500.0,
               "predicted_n": 10, "predicted_ms": 100.0, "predicted_per_token_ms": 10.0, "predicted_per_second": 100.0}
    got = llama_timings(timings)
    assert {k: v["sum"] for k, v in got.items()} == pytest.approx({"prefill": 0.24, "decode": 0.1, "tpot": 0.01,
                                                                   "e2e": 0.34})
    assert {v["count"] for v in got.values()} == {1.0}
    # per-token time from predicted_ms / predicted_n when the engine leaves it out
    assert llama_timings({"predicted_ms": 50.0, "predicted_n": 5})["tpot"]["sum"] == pytest.approx(0.01)
    assert llama_timings(None) == {} and llama_timings([1, 2]) == {}
    assert llama_timings({"prompt_ms": True, "predicted_ms": -1.0, "predicted_n": 0}) == {}


def test_answers_carry_llama_server_timings_streamed_or_whole() -> None:
    timings = {"prompt_n": 3, "prompt_ms": 12.5, "predicted_n": 2, "predicted_ms": 8.0, "predicted_per_token_ms": 4.0}
    chunks = [{"choices": [{"delta": {"content": "4"}, "finish_reason": None}]},
              {"choices": [{"delta": {}, "finish_reason": "stop"}], "timings": timings}]

    async def lines() -> AsyncIterator[str]:
        for c in chunks:
            yield f"data: {json.dumps(c)}"
            yield ""
        yield "data: [DONE]"
        yield ""

    streamed = asyncio.run(read_stream(lines(), "chat", str))
    assert streamed.text == "4" and streamed.timings == timings
    whole = read_json(json.dumps({"choices": [{"message": {"content": "4"}, "finish_reason": "stop"}],
                                  "timings": timings}).encode(), "chat")
    assert whole.timings == timings
    plain = read_json(json.dumps({"choices": [{"message": {"content": "4"}, "finish_reason": "stop"}]}).encode(), "chat")
    assert plain.timings is None


class _Served(Runner):
    """A runner whose manifest extras are one session's server record (what the openai runner reports)."""

    def __init__(self, server: dict[str, Any]) -> None:
        super().__init__()
        self.server = server

    def render(self, item: Any) -> str:
        return ""

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def max_context(self) -> int | None:
        return None

    def run(self, items: Any, emit: Any) -> None:
        raise AssertionError("not run here")

    def manifest_extras(self) -> dict[str, Any]:
        return {"server": json.loads(json.dumps(self.server))}


def test_a_resumed_runs_sessions_add_up_in_the_manifest() -> None:
    first = record(VLLM_SOURCE, {"ttft": {"sum": 0.4, "count": 4.0}, "e2e": {"sum": 2.0, "count": 4.0}}, sent=4)
    # the second session's server is a fresh launch: its counters started at zero, its window is its own
    second = record(VLLM_SOURCE, {"ttft": {"sum": 0.2, "count": 1.0}, "e2e": {"sum": 1.0, "count": 1.0}}, resets=1, sent=1)
    one = runner_extras(_Served({"requests": 4, "engine_timings": first}))["server"]
    two = runner_extras(_Served({"requests": 1, "engine_timings": second}), one)["server"]
    t = two["engine_timings"]
    assert two["requests"] == 5 and two["sessions"] == 2
    assert t["source"] == VLLM_SOURCE and t["requests"] == 5 and t["requests_answered"] == 5
    assert t["counter_resets"] == 1
    assert t["means_seconds"] == pytest.approx({"ttft": 0.12, "e2e": 0.6})
    assert t["totals"]["e2e"]["sum"] == pytest.approx(3.0) and t["totals"]["e2e"]["count"] == 5


def test_a_server_without_timings_says_so_and_keeps_an_earlier_sessions() -> None:
    none = record(None, {}, sent=3)
    assert none == {"source": None, "note": NO_TIMINGS, "requests_answered": 3}
    assert combine(None, none) == none
    assert combine(none, none)["requests_answered"] == 6
    timed = record(LLAMA_SOURCE, {"prefill": {"sum": 0.5, "count": 2.0}}, sent=2)
    mixed = combine(timed, none)
    assert mixed["source"] == LLAMA_SOURCE and mixed["requests"] == 2 and mixed["requests_answered"] == 5


@pytest.fixture
def metrics() -> Iterator[OpenAITestServer]:
    """A real loopback server whose /metrics text the test changes (`state.metrics`, None: a 404)."""
    with OpenAITestServer(state=ServerState(metrics=exposition((1.0, 4), (4.0, 4)))) as server:
        yield server


def test_a_window_waits_for_the_engine_to_record_its_last_request(metrics: OpenAITestServer) -> None:
    clock = EngineTimings()

    async def window() -> None:
        before = await clock.scrape(metrics.root)
        metrics.state.metrics = exposition((1.3, 6), (5.0, 5))  # the second request's end not recorded yet
        late = threading.Timer(0.5, lambda: setattr(metrics.state, "metrics", exposition((1.3, 6), (6.2, 6))))
        late.start()
        await clock.window_end(metrics.root, before, answered=2)

    asyncio.run(window())
    facts = clock.facts()
    assert facts["source"] == VLLM_SOURCE and facts["requests"] == 2 and facts["requests_answered"] == 2
    assert facts["means_seconds"]["ttft"] == pytest.approx(0.15) and facts["means_seconds"]["e2e"] == pytest.approx(1.1)


def test_a_server_without_metrics_is_asked_once_and_reports_none(metrics: OpenAITestServer) -> None:
    metrics.state.metrics = None
    clock = EngineTimings()

    async def windows() -> None:
        for _ in range(3):
            before = await clock.scrape(metrics.root)
            await clock.window_end(metrics.root, before, answered=1)

    asyncio.run(windows())
    assert metrics.state.metrics_gets == 1  # a 404: not asked again in this session
    assert clock.facts() == {"source": None, "note": NO_TIMINGS, "requests_answered": 3}
    clock.response({"prompt_ms": 10.0, "predicted_ms": 20.0, "predicted_n": 4})  # llama-server's answers
    assert clock.facts()["source"] == LLAMA_SOURCE and clock.facts()["requests"] == 1


def _row(timings: ServerTimings | None) -> SpeedRow:
    return SpeedRow(run="r", role="candidate", method="m", device="remote", dtype="", items_timed=2, speed_note=None,
                    accuracy_delta_points=None, harmful_flips=None, load_seconds=None, effects=[],
                    server_timings=timings)


def test_the_speed_tables_server_cells_and_note() -> None:
    vllm = server_timings({"engine_timings": record(VLLM_SOURCE, {"ttft": {"sum": 0.08, "count": 2.0},
                                                                  "tpot": {"sum": 0.02, "count": 2.0},
                                                                  "e2e": {"sum": 0.5, "count": 2.0}}, sent=2)})
    llama = server_timings({"engine_timings": record(LLAMA_SOURCE, llama_timings(
        {"prompt_ms": 41.0, "predicted_ms": 90.0, "predicted_n": 10}), sent=1)})
    silent = server_timings({"engine_timings": record(None, {}, sent=2)})
    assert server_timings({"requests": 2}) is None and server_timings(None) is None
    assert units.server_cell(_row(vllm)) == "40 ms / 10 ms"
    assert units.server_cell(_row(vllm), "e2e") == "250 ms"
    assert units.server_cell(_row(llama)) == "prefill 41 ms / 9 ms"  # llama.cpp times its prompt, not a TTFT
    assert units.server_cell(_row(silent)) == units.DASH and units.server_cell(_row(None)) == units.DASH
    said = note([("vllm-auto", vllm), ("llamacpp-f16", silent), ("vllm-fp8kv", vllm), ("hf", None)]) or ""
    assert "means" in said and f"vllm-auto (2 requests), vllm-fp8kv (2 requests): {VLLM_SOURCE}" in said
    assert "llamacpp-f16: the server reports no timings" in said and "hf" not in said.split(". ", 1)[1]
    shared = server_timings({"engine_timings": record(VLLM_SOURCE, {"e2e": {"sum": 3.0, "count": 3.0}}, sent=2)})
    assert "3 requests, the client counted 2 answered" in (note([("shared", shared)]) or "")
    assert note([("hf", None)]) is None
