"""vLLM's definitions on known data: TTFT, TPOT, ITL (pooled, per chunk), E2EL, the wall clock as
the union of overlapping requests, throughput, goodput (a one-token request's TPOT is 0) and SLOs."""

from __future__ import annotations

import pytest

from evalrun.contract.types import Generation
from evalrun.evals.timing import SLO, SLOError, latency, parse_slo, slo_from_mapping
from tests.fakes.runs import generation


def req(i: int, start: float, ttft: float, gaps: list[float], tokens_per_chunk: int = 1,
        error: str | None = None) -> Generation:
    decode = sum(gaps)
    return generation(f"r{i}", prompt_tokens=10, new_tokens=1 + tokens_per_chunk * len(gaps),
                      seconds=ttft + decode + 0.001, batch_size=1, prefill_seconds=ttft, decode_seconds=decode,
                      started_at=start, itl_seconds=gaps, error=error)


def test_definitions_on_one_request() -> None:
    g = req(0, 100.0, 0.5, [0.1, 0.2, 0.3])
    assert latency.ttft(g) == 0.5
    assert latency.e2el(g) == pytest.approx(1.1)
    assert latency.tpot(g) == pytest.approx(0.6 / 3)  # (E2EL - TTFT) / (output tokens - 1)
    assert latency.itl(g) == [0.1, 0.2, 0.3]


def test_itl_differs_from_tpot_when_chunks_carry_several_tokens() -> None:
    """Speculative decoding: 3 tokens per chunk, so TPOT is a third of the gap between chunks (vllm#19776)."""
    g = req(0, 0.0, 0.2, [0.3, 0.3], tokens_per_chunk=3)
    assert g.new_tokens == 7
    assert latency.tpot(g) == pytest.approx(0.6 / 6)
    assert latency.request_metrics([g])["itl"]["p50"] == pytest.approx(0.3)


def test_itl_is_pooled_over_requests_not_averaged_per_request() -> None:
    gens = [req(0, 0.0, 0.1, [0.01] * 9), req(1, 0.0, 0.1, [1.0])]
    itl = latency.request_metrics(gens)["itl"]
    assert itl["n"] == 10 and itl["p50"] == pytest.approx(0.01)  # pooled: 9 short gaps and one long
    assert latency.request_metrics(gens)["tpot"]["p50"] == pytest.approx((0.01 + 1.0) / 2)  # one per request


def test_duration_is_the_wall_clock_of_overlapping_requests() -> None:
    # three concurrent requests over [0, 1.101], then one alone over [5, 5.601]: 5.601 s of wall clock
    # (the idle wait for the last arrival counts, as in vLLM), not the 3.9 s the requests sum to
    gens = [req(0, 0.0, 0.5, [0.6]), req(1, 0.2, 0.3, [0.5]), req(2, 0.4, 0.3, [0.3]), req(3, 5.0, 0.3, [0.3])]
    seconds, basis = latency.duration(gens)
    assert seconds == pytest.approx(5.601) and basis == latency.BASIS_UNION
    # a run stopped and resumed an hour later: the pause is not counted
    later = [*gens, req(4, 3600.0, 0.3, [0.3])]
    assert latency.duration(later)[0] == pytest.approx(5.601 + 0.601)
    m = latency.request_metrics(gens)
    assert m["request_throughput"] == pytest.approx(4 / seconds)
    assert m["output_throughput"] == pytest.approx(8 / seconds)
    assert m["total_token_throughput"] == pytest.approx((8 + 40) / seconds)


def test_failed_requests_are_not_completed_and_meet_no_slo() -> None:
    gens = [req(0, 0.0, 0.1, [0.01]), req(1, 0.0, 0.1, [0.01], error="boom")]
    m = latency.request_metrics(gens, slo=SLO(ttft=1.0))
    assert m["completed"] == 1 and m["failed"] == 1 and m["ttft"]["n"] == 1
    assert m["goodput"]["good"] == 1 and m["goodput"]["share"] == 0.5


def test_goodput_counts_requests_meeting_every_slo() -> None:
    gens = [req(0, 0.0, 0.1, [0.02] * 4), req(1, 0.0, 0.6, [0.02] * 4), req(2, 0.0, 0.1, [0.2] * 4),
            Generation(item_id="one", pack="p", prompt_hash="h", output="x", new_tokens=1, seconds=0.1,
                       prefill_seconds=0.1, decode_seconds=0.0, started_at=0.0)]
    slo = parse_slo("ttft=500ms,tpot=50ms")
    good = latency.goodput(gens, slo, seconds=2.0)
    # r1 misses TTFT, r2 misses TPOT; the one-token request's TPOT counts as 0, as vLLM does
    assert good["good"] == 2 and good["share"] == 0.5 and good["rate"] == 1.0
    assert good["slo"] == "ttft<=500ms, tpot<=50ms"


@pytest.mark.parametrize("text, expected", [
    ("ttft=500ms", SLO(ttft=0.5)), ("tpot=50", SLO(tpot=0.05)), ("e2el=10s,ttft=0.2s", SLO(ttft=0.2, e2el=10.0)),
    ("TTFT=250us", SLO(ttft=0.00025)),
])
def test_slo_parsing(text: str, expected: SLO) -> None:
    assert parse_slo(text) == expected


@pytest.mark.parametrize("text, key", [("ttft", "ttft"), ("speed=1s", "speed"), ("ttft=-1ms", "ttft"),
                                       ("ttft=fast", "ttft"), ("tpot=0", "tpot")])
def test_bad_slos_name_the_key(text: str, key: str) -> None:
    with pytest.raises(SLOError) as err:
        parse_slo(text)
    assert err.value.key == key and key in str(err.value)


def test_slo_mapping_from_a_config() -> None:
    assert slo_from_mapping({"ttft": "500ms", "e2el": 10000}) == SLO(ttft=0.5, e2el=10.0)
    with pytest.raises(SLOError):
        slo_from_mapping({"ttft": True})
    with pytest.raises(SLOError):
        slo_from_mapping({})
