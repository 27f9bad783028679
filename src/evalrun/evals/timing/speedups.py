"""Paired speedups: how much faster a candidate is than the baseline at one metric and
percentile, with the interval a gate can stand on.

The one computation behind the speed table's ratios, the `speed:` gate rules and
the sweeps. A speedup is baseline / candidate of a latency (TTFT, TPOT, ITL,
E2EL: above 1 is faster) over the requests both runs timed, with a 95% paired
bootstrap interval (requests resampled, the same ones on both sides). At p50 it
is the median of the per-request ratios (a load that slows both sides of a pair
cancels in its ratio); at another percentile, the ratio of the two sides'
percentiles (a tail is not one request's). ITL pairs each request's median gap. When interleaved timings exist
(evals/speed/interleave.py), they are used instead of the runs' own: both sides were
timed side by side, so a machine whose load changed between the runs does not
bias the ratio.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from evalrun.contract.types import Generation
from evalrun.evals import stats
import evalrun.evals.timing.latency as latency

BOOTSTRAP_RESAMPLES = 2000
STORED_RUNS = "stored runs"  # the basis of speedups from each run's own (sequential) timings
# a rule's metric: ttft_p50, tpot_p99, e2el_mean is not a percentile and is refused
METRIC_NAME = re.compile(r"^(ttft|tpot|itl|e2el)_p(\d{1,2}(?:\.\d+)?)$")


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
    """Per request timed in both: (baseline value, candidate value), in item-id order."""
    fn = latency.PER_REQUEST[metric]
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
    if iv is None:
        return None
    return Speedup(name, iv.delta, iv.low, iv.high, iv.n, confidence, basis)


def pair_timings(base: Any, cand: Any) -> tuple[Mapping[str, Generation], Mapping[str, Generation], str]:
    """The timings a speedup of `cand` over `base` should use: the interleaved re-timing of both
    when the candidate has one against this baseline, else the runs' own."""
    inter = getattr(cand, "interleaved", None)
    if inter is not None and inter.baseline == base.manifest.key:
        return inter.base, inter.cand, inter.basis
    return base.generations, cand.generations, STORED_RUNS
