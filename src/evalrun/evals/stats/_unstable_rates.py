"""Fields the baseline gets right only sometimes, judged by their rates.

A field right in k of K baseline replicates (0 < k < K) cannot be gated flip by
flip: one wrong candidate answer there is what the baseline does too. But a
candidate that is wrong there every time, where the baseline is usually right,
has lost something, and listing it as noise would hide it. So each flip rule
also pools the unstable fields of its scope and asks whether the candidate's
answers there (its own, plus its re-asks when the gate confirms) are right less
often than the baseline's replicates.

The test is exact and conditional: for each field the right answers of both
sides together are fixed, and under "the candidate answers like one more
replicate" the candidate's share of them is hypergeometric. The fields were
chosen because the baseline's own count was strictly between 0 and K, so each
field's hypergeometric is truncated to the counts that leave the baseline
there (without that, a field the baseline rarely gets right would be chosen
exactly when its replicates were lucky, and a candidate answering like the
baseline would look worse). The fields are independent: the p-value is the
lower tail of the sum of those truncated hypergeometrics (a stratified exact
test, the exact form of Mantel-Haenszel).
With one candidate answer per field a field can say little (a field right in 2
of 3 replicates gives p = 1/2 when the candidate misses it once); re-asks give
the candidate several answers and the test its power. `smallest_p` is the p-value
of a candidate wrong in every answer: when even that is not below alpha, no
candidate could fail the test, and the gate says "not testable" rather than pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RateTest", "lower_tail", "rate_test"]

Stratum = tuple[int, int, int, int]  # (baseline right, baseline answers, candidate right, candidate answers)


def lower_tail(strata: list[Stratum]) -> float:
    """P(the candidate's right answers summed over the strata <= observed), each stratum's
    totals fixed and its baseline count strictly between 0 and its replicates (one-sided: the
    candidate right less often than the baseline)."""
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
    return RateTest(len(strata), sum(s[0] for s in strata), sum(s[1] for s in strata),
                    sum(s[2] for s in strata), sum(s[3] for s in strata), lower_tail(strata), alpha,
                    lower_tail([(b, k, 0, c) for b, k, _, c in strata]))
