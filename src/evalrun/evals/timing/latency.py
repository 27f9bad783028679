"""Per-request latency and throughput by vLLM `bench serve`'s definitions, and paired speedups: the one place
these quantities are defined; every report, gate rule, sweep and benchmark reads them from here (docs/speed.md,
'Definitions', gives each formula).

A speedup is baseline / candidate of a latency over the requests both runs timed, with a paired bootstrap
interval: at p50 the median of the per-request ratios (a load that slows both sides of a pair cancels in its
ratio), at another percentile the ratio of the two sides' percentiles (a tail is not one request's).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from typing import Annotated, Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np
from pydantic import BeforeValidator, PlainSerializer

from evalrun.contract.errors import UsageError
from evalrun.contract.types import Generation
from evalrun.evals import stats
from evalrun.evals.stats import percentile

PERCENTILES: tuple[float, ...] = (50, 90, 95, 99)
METRICS: tuple[str, ...] = ("ttft", "tpot", "itl", "e2el")
IDLE_LIMIT = 60.0  # seconds with nothing in flight after which a run counts as stopped (resumed later)
BASIS_UNION = "wall clock from the first request's start to the last one's end (pauses over 60 s left out)"
BASIS_SUMMED = "summed batch times (no start times stored): each batch counted once"
SLO_METRICS = ("ttft", "tpot", "e2el")
_VALUE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(ms|s|us|µs)?\s*$", re.IGNORECASE)
_SCALE = {"ms": 1e-3, "s": 1.0, "us": 1e-6, "µs": 1e-6, None: 1e-3}
BOOTSTRAP_RESAMPLES = 2000
STORED_RUNS = "stored runs"  # the basis of speedups from each run's own (sequential) timings
# a rule's metric: ttft_p50, tpot_p99, e2el_mean is not a percentile and is refused
METRIC_NAME = re.compile(r"^(ttft|tpot|itl|e2el)_p(\d{1,2}(?:\.\d+)?)$")


def ttft(g: Generation) -> float | None:
    return g.prefill_seconds if g.error is None else None


def e2el(g: Generation) -> float | None:
    if g.error is not None:
        return None
    if g.prefill_seconds is not None and g.decode_seconds is not None:
        return g.prefill_seconds + g.decode_seconds
    if g.prefill_seconds is not None and g.new_tokens <= 1:
        return g.prefill_seconds
    # an untimed older run at batch 1: the whole call
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
    """Every figure of docs/speed.md for a set of requests (a run, a pack, a shape or a length bucket)."""
    gens = list(gens)
    ok = [g for g in gens if g.error is None]
    seconds, basis = duration(ok)
    out_tokens = sum(g.new_tokens for g in ok)
    in_tokens = sum(g.prompt_tokens for g in ok)
    figures: dict[str, Any] = {"requests": len(gens), "completed": len(ok), "failed": len(gens) - len(ok),
                               "duration_seconds": round(seconds, 6), "throughput_basis": basis,
                               "request_throughput": len(ok) / seconds if seconds > 0 else None,
                               "output_throughput": out_tokens / seconds if seconds > 0 else None,
                               "total_token_throughput": (in_tokens + out_tokens) / seconds if seconds > 0 else None,
                               "total_output_tokens": out_tokens, "total_input_tokens": in_tokens}
    figures |= {m: distribution(values(ok, m), percentiles) for m in METRICS}
    if slo is not None and slo.given():
        figures["goodput"] = goodput(gens, slo, seconds)
    return figures


class SLOError(UsageError, ValueError):
    """A bad SLO; the message names the key."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class SLO:
    """Limits in seconds; None: no objective on that metric."""

    ttft: float | None = None
    tpot: float | None = None
    e2el: float | None = None

    def given(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def text(self) -> str:
        """'ttft<=500ms, tpot<=50ms': how every output states the objectives."""
        return ", ".join(f"{f.name}<={_ms(v)}" for f in fields(self) if (v := getattr(self, f.name)) is not None)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:g}ms" if seconds < 10 else f"{seconds:g}s"


def seconds_of(key: str, raw: Any) -> float:
    """'500ms', '0.5s', 500 (ms) -> seconds; anything else is an SLOError naming `key`."""
    if isinstance(raw, bool):
        raise SLOError(key, f"{key}: expected a time such as 500ms or 2s, got {raw!r}")
    if isinstance(raw, (int, float)):
        value = float(raw) * _SCALE[None]
    else:
        m = _VALUE.match(str(raw))
        if not m:
            raise SLOError(key, f"{key}: expected a time such as 500ms or 2s, got {raw!r}")
        value = float(m.group(1)) * _SCALE[(m.group(2) or "").lower() or None]
    if not math.isfinite(value) or value <= 0:
        raise SLOError(key, f"{key}: must be a positive time, got {raw!r}")
    return value


def slo_from_mapping(data: Any) -> SLO:
    """A config's `slo:` mapping ({ttft: 500ms, tpot: 50ms, e2el: 10s})."""
    if not isinstance(data, dict) or not data:
        raise SLOError("", "must be a mapping such as {ttft: 500ms, tpot: 50ms, e2el: 10s}")
    unknown = sorted(set(data) - set(SLO_METRICS))
    if unknown:
        raise SLOError(str(unknown[0]), f"unknown SLO {unknown[0]!r}; the SLOs are {', '.join(SLO_METRICS)}")
    return SLO(**{k: seconds_of(k, v) for k, v in data.items()})


def _validated(data: Any) -> SLO | None:
    if data is None or isinstance(data, SLO):
        return data
    try:
        return slo_from_mapping(data)
    except SLOError as exc:
        raise ValueError(str(exc)) from None


def _written(slo: SLO | None) -> dict[str, str] | None:
    """An SLO as a config would write it, in seconds (exact, and read back as the same SLO)."""
    if slo is None:
        return None
    return {f.name: f"{v!r}s" for f in fields(slo) if (v := getattr(slo, f.name)) is not None}


# a config's (or a gate rule's) `slo:` mapping, validated into the SLO and dumped as a mapping again
ConfiguredSLO = Annotated[Optional[SLO], BeforeValidator(_validated), PlainSerializer(_written)]


def parse_slo(option: str) -> SLO:
    """`ttft=500ms,tpot=50ms,e2el=10s` (the --slo option)."""
    data: dict[str, str] = {}
    for part in option.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise SLOError(part.strip(), f"--slo {option!r}: expected METRIC=TIME pairs such as ttft=500ms,tpot=50ms")
        data[key.strip().lower()] = value
    return slo_from_mapping(data)


@dataclass(frozen=True)
class Speedup:
    metric: str  # "tpot_p50"
    value: float  # baseline / candidate
    low: float
    high: float
    n: int  # requests paired
    confidence: float
    basis: str  # STORED_RUNS or "interleaved re-timing (k batch pairs, A B A B)"


def parse_metric(name: str) -> tuple[str, float]:
    """'tpot_p99' -> ('tpot', 99.0); ValueError for anything else."""
    m = METRIC_NAME.match(name)
    if not m or not 0 < float(m.group(2)) < 100:
        raise ValueError(f"unknown speed metric {name!r}: use ttft, tpot, itl or e2el with a percentile, "
                         "e.g. tpot_p50, ttft_p99")
    return m.group(1), float(m.group(2))


def paired(base: Mapping[str, Generation], cand: Mapping[str, Generation], metric: str,
           ids: Iterable[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per request timed in both, in item-id order."""
    fn = PER_REQUEST[metric]
    b_vals, c_vals = [], []
    for item_id in sorted(ids if ids is not None else base):
        bg, cg = base.get(item_id), cand.get(item_id)
        if bg is None or cg is None:
            continue
        b, c = fn(bg), fn(cg)
        if b is not None and c is not None:
            b_vals.append(b)
            c_vals.append(c)
    return np.asarray(b_vals, dtype=float), np.asarray(c_vals, dtype=float)


def speedup(base: Mapping[str, Generation], cand: Mapping[str, Generation], name: str,
            ids: Iterable[str] | None = None, confidence: float = 0.95, basis: str = STORED_RUNS) -> Speedup | None:
    """The speedup at `name` (e.g. 'tpot_p50') over the paired requests; None when fewer than two pair."""
    metric, q = parse_metric(name)
    b, c = paired(base, cand, metric, ids)
    if q == 50:
        iv = stats.bootstrap_median_of_ratios(b, c, n_resamples=BOOTSTRAP_RESAMPLES, confidence=confidence)
    else:
        iv = stats.bootstrap_ratio_of_quantiles(b, c, q, n_resamples=BOOTSTRAP_RESAMPLES, confidence=confidence)
    return None if iv is None else Speedup(name, iv.delta, iv.low, iv.high, iv.n, confidence, basis)


def pair_timings(base: Any, cand: Any) -> tuple[Mapping[str, Generation], Mapping[str, Generation], str]:
    """The interleaved re-timing of both when the candidate has one against this baseline, else the runs' own."""
    inter = getattr(cand, "interleaved", None)
    if inter is not None and inter.baseline == base.manifest.key:
        return inter.base, inter.cand, inter.basis
    return base.generations, cand.generations, STORED_RUNS
