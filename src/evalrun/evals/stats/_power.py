"""Harmful flips against noise: does a candidate flip more than the baseline flips against itself (a one-sided Fisher
exact test on the A/A counts), what flip rate a pack can detect at all, and the exact stratified test of the fields the
baseline gets right only sometimes (docs/gate.md, 'Noise, confirmation, power and early stop').

Power is exact, conditional on the A/A counts: the candidate's flips are Bin(n, q) with q = 1 - (1 - p_aa)(1 - r), its
own noise at the A/A rate plus a harmful rate r of its own; a pack fails when any of its rules fails, so its power is
1 - prod(1 - power_k). The rate test truncates each field's hypergeometric to the counts that keep the baseline strictly
between 0 and K: those counts chose the field, and without the truncation a candidate answering like the baseline would
look worse."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict


@lru_cache(maxsize=65536)
def fisher_greater(x: int, n: int, y: int, m: int) -> float:
    """One-sided Fisher exact p-value that x/n exceeds y/m."""
    from scipy import stats as _sps  # lazy: importing scipy.stats takes ~1 s
    return float(_sps.fisher_exact(np.array([[x, n - x], [y, m - y]]), alternative="greater").pvalue)


@dataclass(frozen=True)
class FlipTest:
    """One harmful-flip rule's decision: `limit` flips are tolerated; with A/A counts, only a rate
    beyond the A/A rate at level `alpha` fails."""

    limit: int
    alpha: float
    aa_flips: int = 0
    aa_trials: int = 0  # 0: no replicates, the noise is not measured

    @property
    def noise_aware(self) -> bool:
        return self.aa_trials > 0

    def p_value(self, x: int, n: int) -> float | None:
        """None without A/A counts: every flip counts."""
        return fisher_greater(x, n, self.aa_flips, self.aa_trials) if self.noise_aware and n > 0 else None

    def fails(self, x: int, n: int) -> bool:
        if x <= self.limit:
            return False
        p = self.p_value(x, n)
        return p is None or p < self.alpha

    def critical(self, n: int) -> int | None:
        """The fewest flips among n fields that fail the rule; None when even n flips pass."""
        lo = self.limit + 1
        if lo > n or not self.fails(n, n):
            return None
        # the p-value falls as x grows: the counts that fail are the tail of lo..n
        return lo + bisect.bisect_left(range(lo, n + 1), True, key=lambda x: self.fails(x, n))

    def power(self, n: int, rate: float) -> float:
        """P(the rule fails) when the candidate adds a harmful flip rate `rate` to its own noise."""
        x_star = self.critical(n)
        if x_star is None:
            return 0.0
        aa_rate = self.aa_flips / self.aa_trials if self.aa_trials else 0.0
        q = 1.0 - (1.0 - aa_rate) * (1.0 - rate)
        from scipy import stats as _sps  # lazy: importing scipy.stats takes ~1 s
        return float(_sps.binom.sf(x_star - 1, n, min(1.0, max(0.0, q))))

    def scaled(self, factor: float) -> "FlipTest":
        """The same test with A/A counts grown as a pack `factor` times larger would give them."""
        return FlipTest(self.limit, self.alpha, round(self.aa_flips * factor),
                        max(1, round(self.aa_trials * factor))) if self.noise_aware else self


@dataclass(frozen=True)
class Scope:
    """One harmful-flip rule on one pack: its test and the n fields it can catch a flip on."""

    rule: str
    test: FlipTest
    fields: int


def pack_power(scopes: Sequence[Scope], rate: float) -> float:
    """P(some rule of the pack fails) at a harmful flip rate `rate` in every scope."""
    return 1.0 - math.prod(1.0 - s.test.power(s.fields, rate) for s in scopes)


def detectable_rate(scopes: Sequence[Scope], power: float = 0.95) -> float | None:
    """The smallest harmful flip rate the pack detects with probability `power`; None when no rate
    would (no field to flip, or a tolerance larger than the fields)."""
    if not scopes or pack_power(scopes, 1.0) < power:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if pack_power(scopes, mid) >= power else (mid, hi)
    return hi


def items_needed(scopes: Sequence[Scope], items: int, rate: float, power: float = 0.95,
                 most: int = 10_000_000) -> int | None:
    """Paired items a pack like this one (same fields per item, same share right at baseline, same
    A/A rate) would need to detect `rate` with probability `power`; None beyond `most`."""
    if items <= 0 or not scopes or all(s.fields == 0 for s in scopes):
        return None

    def enough(n_items: int) -> bool:
        f = n_items / items
        grown = [Scope(s.rule, s.test.scaled(f), math.floor(s.fields * f)) for s in scopes]
        return pack_power(grown, rate) >= power

    hi = max(1, items)
    while not enough(hi):
        hi *= 2
        if hi > most:
            return None
    return 1 + bisect.bisect_left(range(1, hi + 1), True, key=enough)  # the fewest items that are enough


Stratum = tuple[int, int, int, int]  # (baseline right, baseline answers, candidate right, candidate answers)


def lower_tail(strata: list[Stratum]) -> float:
    """P(the candidate's right answers summed over the strata <= observed), each stratum's totals fixed and its baseline
    count strictly between 0 and its replicates (one-sided: the candidate right less often than the baseline)."""
    pmf = np.array([1.0])
    observed = 0
    for b_right, b_n, c_right, c_n in strata:
        xs = np.arange(c_n + 1)
        total = b_right + c_right
        from scipy import stats as _sps  # lazy: importing scipy.stats takes ~1 s
        field = _sps.hypergeom.pmf(xs, b_n + c_n, total, c_n)
        field = np.where((total - xs > 0) & (total - xs < b_n), field, 0.0)  # the baseline stays unstable
        pmf = np.convolve(pmf, field / field.sum())
        observed += c_right
    return float(min(1.0, pmf[: observed + 1].sum()))


@dataclass(frozen=True)
class RateTest:
    """The unstable fields of one rule: both sides' right answers and the exact p-value."""

    fields: int
    baseline_right: int
    baseline_answers: int
    candidate_right: int
    candidate_answers: int
    p_value: float
    alpha: float
    smallest_p: float  # a candidate wrong in every answer: the most this test could ever reject

    @property
    def fails(self) -> bool:
        return self.p_value < self.alpha

    @property
    def can_fail(self) -> bool:
        return self.smallest_p < self.alpha

    @property
    def text(self) -> str:
        b = f"{self.baseline_right}/{self.baseline_answers}"
        c = f"{self.candidate_right}/{self.candidate_answers}"
        verdict = "below the baseline's: FAIL" if self.fails else "not below the baseline's"
        return (f"on the {self.fields} field(s) right in only some baseline replicates the candidate answered "
                f"right {c} against the baseline's {b} (exact stratified test p = {self.p_value:.3g}, fails "
                f"below {self.alpha:.3g}): {verdict}")


def rate_test(strata: list[Stratum], alpha: float) -> RateTest | None:
    """None when no unstable field is in scope."""
    if not strata:
        return None
    b_right, b_n, c_right, c_n = map(sum, zip(*strata))
    return RateTest(len(strata), b_right, b_n, c_right, c_n, lower_tail(strata), alpha,
                    lower_tail([(b, k, 0, c) for b, k, _, c in strata]))


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided exact (Clopper-Pearson) interval of a share k/n: never narrower than the truth, which a
    false-FAIL rate measured on a few dozen A/A pairs needs (0 of 66 still allows 5.4%)."""
    if n <= 0:
        return 0.0, 1.0
    from scipy import stats as _sps  # lazy: importing scipy.stats takes ~1 s
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if k <= 0 else float(_sps.beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k >= n else float(_sps.beta.ppf(1.0 - tail, k + 1, n - k))
    return low, high


class Share(BaseModel):
    """k of n with its two-sided Clopper-Pearson interval (a rate measured on a few dozen pairs is wide)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int
    n: int
    low: float
    high: float

    @classmethod
    def of(cls, k: int, n: int, confidence: float = 0.95) -> "Share":
        low, high = clopper_pearson(k, n, confidence)
        return cls(k=k, n=n, low=low, high=high)

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else 0.0

    @property
    def text(self) -> str:
        return f"{self.k}/{self.n} ({self.rate:.1%}; {100 * self.low:.2g}-{100 * self.high:.2g}%)"


class MeasuredPower(BaseModel):
    """A pack's power measured rather than computed: harmful flips planted in real repeats at the rate its
    verdict says it detects with `stated` probability, and how often its flip rules then failed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pack: str
    rate: float
    stated: float
    predicted: float  # the exact computation's power at `rate`, averaged over the pairs
    detected: Share
    flips: float  # flips planted per comparison, on average
    source: str = ""  # where it was measured (the profile's path), for the power line

    @property
    def text(self) -> str:
        return (f"measured by calibrate at {100 * self.rate:.2g}%: detected in {self.detected.text} of the planted "
                f"comparisons (exact computation {self.predicted:.2f})"
                + (f", {self.source}" if self.source else ""))
