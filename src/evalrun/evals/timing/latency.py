"""Per-request latency and throughput by vLLM `bench serve`'s definitions.

The one place these quantities are defined; every report, gate rule, sweep and
benchmark reads them from here. A request is one item (hf: one sequence of a
batch, timed from the batch's start, no queueing; openai: one HTTP request,
timed at the client from the moment it was sent).

- TTFT: time to the first output token (`prefill_seconds`).
- TPOT: (E2EL - TTFT) / (output tokens - 1), per request; undefined (left out
  of the distribution, 0 for goodput, as vLLM) when a request made one token.
- ITL: every gap between successive output chunks, pooled over requests (a
  streamed chunk or a decoding step; several tokens per chunk under
  speculative decoding make ITL longer than TPOT, vllm#19776).
- E2EL: time to the last output token (TTFT + decode); for an untimed older
  run at batch 1, the whole call.
- Duration: the run's wall clock, from its first request's start to its
  last one's end (vLLM's benchmark duration: idle time between Poisson
  arrivals counts), less any gap of more than IDLE_LIMIT seconds with no
  request in flight (a run stopped and resumed later); older runs without
  start times sum each batch's time once (the basis says which).
- Request / output / total token throughput: completed requests, output
  tokens, prompt + output tokens, each over the duration.
- Goodput: requests meeting every SLO given, over the duration; its share is
  over all requests asked (a failed request meets no SLO).

Percentiles use numpy's linear interpolation (`evals.stats.percentile`), as
vLLM does; the default set is p50/p90/p95/p99.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from evalrun.contract.types import Generation
from evalrun.evals.timing._slo import SLO
from evalrun.evals.stats import percentile

PERCENTILES: tuple[float, ...] = (50, 90, 95, 99)
METRICS: tuple[str, ...] = ("ttft", "tpot", "itl", "e2el")
IDLE_LIMIT = 60.0  # seconds with nothing in flight after which a run counts as stopped (resumed later)
BASIS_UNION = "wall clock from the first request's start to the last one's end (pauses over 60 s left out)"
BASIS_SUMMED = "summed batch times (no start times stored): each batch counted once"


def ttft(g: Generation) -> float | None:
    return g.prefill_seconds if g.error is None else None


def e2el(g: Generation) -> float | None:
    if g.error is not None:
        return None
    if g.prefill_seconds is not None and g.decode_seconds is not None:
        return g.prefill_seconds + g.decode_seconds
    if g.prefill_seconds is not None and g.new_tokens <= 1:
        return g.prefill_seconds
    return g.seconds if g.batch_size == 1 and g.seconds > 0 else None


def tpot(g: Generation) -> float | None:
    if g.error is not None or g.new_tokens < 2 or g.decode_seconds is None:
        return None
    return g.decode_seconds / (g.new_tokens - 1)


def itl(g: Generation) -> list[float]:
    return list(g.itl_seconds or []) if g.error is None else []


def itl_median(g: Generation) -> float | None:
    """One ITL figure per request (its median gap), for pairing requests across runs."""
    return percentile(itl(g), 50) if g.itl_seconds else None


PER_REQUEST: dict[str, Callable[[Generation], float | None]] = {"ttft": ttft, "tpot": tpot, "e2el": e2el,
                                                                   "itl": itl_median}


def pkey(q: float) -> str:
    """'p50', 'p99', 'p99.9': the one spelling of a percentile key."""
    return f"p{q:g}"


def distribution(values: Iterable[float | None], percentiles: Sequence[float] = PERCENTILES) -> dict[str, Any]:
    """{"mean", "p50", ..., "n"} of the values that are present; None figures when none are."""
    present = [float(v) for v in values if v is not None]
    out: dict[str, Any] = {"mean": sum(present) / len(present) if present else None}
    out |= {pkey(q): percentile(present, q) for q in percentiles}
    return out | {"n": len(present)}


def values(gens: Iterable[Generation], metric: str) -> list[float]:
    """The metric's values over the generations: one per request, or every gap for ITL."""
    if metric == "itl":
        return [gap for g in gens for gap in itl(g)]
    fn = PER_REQUEST[metric]
    return [v for g in gens if (v := fn(g)) is not None]


def duration(gens: Sequence[Generation]) -> tuple[float, str]:
    """Wall-clock seconds the requests were in flight, and how that was measured."""
    timed = [(g.started_at, g.started_at + g.seconds) for g in gens if g.started_at is not None and g.seconds > 0]
    untimed = [g for g in gens if g.started_at is None and g.seconds > 0]
    total, end = 0.0, None
    for a, b in sorted(timed):
        if end is None or a > end + IDLE_LIMIT:
            total += b - a
            end = b
        elif b > end:
            total += b - max(end, a) + max(0.0, a - end)  # an idle gap under the limit counts
            end = b
    total += sum(g.seconds / max(g.batch_size, 1) for g in untimed)
    return total, BASIS_UNION if not untimed else BASIS_SUMMED


def meets(g: Generation, slo: SLO) -> bool:
    """Whether a request met every SLO given (vLLM: a one-token request's TPOT is 0)."""
    if g.error is not None:
        return False
    checks = ((slo.ttft, ttft(g)), (slo.tpot, tpot(g) if g.new_tokens >= 2 else 0.0), (slo.e2el, e2el(g)))
    return all(value is not None and value <= limit for limit, value in checks if limit is not None)


def goodput(gens: Sequence[Generation], slo: SLO, seconds: float | None = None) -> dict[str, Any]:
    """Requests meeting every SLO: how many, their share of all requests, and their rate per second."""
    good = sum(1 for g in gens if meets(g, slo))
    seconds = duration(gens)[0] if seconds is None else seconds
    return {"slo": slo.text(), "good": good, "requests": len(gens),
            "share": good / len(gens) if gens else None, "rate": good / seconds if seconds > 0 else None}


def request_metrics(gens: Iterable[Generation], percentiles: Sequence[float] = PERCENTILES,
                    slo: SLO | None = None) -> dict[str, Any]:
    """Every figure above for a set of requests (a run, a pack, a shape or a length bucket)."""
    gens = list(gens)
    ok = [g for g in gens if g.error is None]
    seconds, basis = duration(ok)
    out_tokens = sum(g.new_tokens for g in ok)
    in_tokens = sum(g.prompt_tokens for g in ok)
    figures: dict[str, Any] = {
        "requests": len(gens), "completed": len(ok), "failed": len(gens) - len(ok),
        "duration_seconds": round(seconds, 6), "throughput_basis": basis,
        "request_throughput": len(ok) / seconds if seconds > 0 else None,
        "output_throughput": out_tokens / seconds if seconds > 0 else None,
        "total_token_throughput": (in_tokens + out_tokens) / seconds if seconds > 0 else None,
        "total_output_tokens": out_tokens, "total_input_tokens": in_tokens,
    }
    figures |= {m: distribution(values(ok, m), percentiles) for m in METRICS}
    if slo is not None and slo.given():
        figures["goodput"] = goodput(gens, slo, seconds)
    return figures
