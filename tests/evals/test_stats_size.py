"""The size of the McNemar tests a report prints, computed exactly, and the coverage of the paired bootstrap
interval, simulated: a statistic whose error rate is not what it claims misleads every report that prints it.

Size. Under H0 with n paired items and discordance d, the discordant count is K ~ Binomial(n, d) and, given
K = k, b ~ Binomial(k, 1/2); the type-I error at alpha is sum_k P(K = k) P(p(b, k - b) < alpha | k), enumerated
exactly (no Monte Carlo error). The grid: n 25..60 step 5 (packs of a few dozen items) and the demo's own
12 and 13 items per pack (`evalrun check configs/baseline.yaml`: needle_numbers 12, doc_fields 13), d 0.10..0.40
step 0.05 (`-s` prints every size). Computed at alpha 0.05: where the expected discordant count n*d >= 12 (22
sizes), exact 0.028 and mid-p 0.045 (each 0.043-0.047); over the whole grid, exact 0.016 and mid-p 0.032; at the
demo's 12-13 items, exact 0.000-0.010 and mid-p 0.000-0.028. The 0.045-0.055 band does NOT hold where n*d < 12:
with 4 or fewer discordant pairs no split reaches p < 0.05 under any non-randomised test (even 4-0 has mid-p
1/16), so the size there is structurally below alpha; the mid-p brings it closer to alpha at every size and
never above 0.055. Those are the assertions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from evalrun.evals.stats import bootstrap_accuracy_delta, mcnemar_exact, mcnemar_midp

ALPHA = 0.05
SIZES = [(n, round(d, 2)) for n in (12, 13, *range(25, 61, 5)) for d in np.arange(0.10, 0.401, 0.05)]


def _rejects(k: int, test) -> float:
    """P(reject | k discordant pairs) under H0: the Binomial(k, 1/2) mass of the splits the test rejects."""
    return sum(binom.pmf(b, k, 0.5) for b in range(k + 1) if test(b, k - b) < ALPHA)


def _sizes(test) -> dict[tuple[int, float], float]:
    """The exact type-I error at each (n, d) of SIZES."""
    given_k = [_rejects(k, test) for k in range(61)]
    return {(n, d): float(sum(binom.pmf(k, n, d) * given_k[k] for k in range(n + 1))) for n, d in SIZES}


def test_midp_by_hand() -> None:
    # 2 vs 10: exact 2 P(X <= 2) = 158/4096; mid-p drops P(X = 2) = 66/4096
    assert mcnemar_midp(2, 10) == pytest.approx(92 / 4096) and mcnemar_midp(10, 2) == pytest.approx(92 / 4096)
    assert mcnemar_midp(5, 0) == pytest.approx(0.5**5)  # 2 P(X=0) - P(X=0)
    assert mcnemar_midp(0, 0) == 1.0 and mcnemar_midp(3, 3) == 1.0 and mcnemar_midp(0, 1) == pytest.approx(0.5)
    for b, c in ((1, 4), (7, 3), (0, 9), (12, 20)):
        assert mcnemar_midp(b, c) < mcnemar_exact(b, c) <= 1.0
    with pytest.raises(ValueError):
        mcnemar_midp(-1, 2)


def test_midp_holds_its_size_where_the_demo_has_enough_discordant_pairs() -> None:
    exact, midp = _sizes(mcnemar_exact), _sizes(mcnemar_midp)
    print("\n   n     d   exact   mid-p")
    for n, d in SIZES:
        print(f"{n:4d}  {d:.2f}  {exact[n, d]:.4f}  {midp[n, d]:.4f}")
    enough = [s for s in SIZES if s[0] * s[1] >= 12]
    mean_exact, mean_midp = (float(np.mean([t[s] for s in enough])) for t in (exact, midp))
    whole_exact, whole_midp = float(np.mean(list(exact.values()))), float(np.mean(list(midp.values())))
    print(f"n*d >= 12 ({len(enough)} sizes): exact {mean_exact:.4f}, mid-p {mean_midp:.4f}; "
          f"whole grid: exact {whole_exact:.4f}, mid-p {whole_midp:.4f}")
    assert 0.045 <= mean_midp <= 0.055  # the band, where the data can carry it
    assert all(0.04 <= midp[s] <= 0.055 for s in enough)
    assert mean_exact < 0.035  # why mid-p: the exact test is well under its nominal 0.05 there
    # everywhere: never anti-conservative past the band, and never further from alpha than the exact test
    assert all(exact[s] <= midp[s] <= 0.055 for s in SIZES)
    assert whole_midp < 0.045  # below the band over the whole grid: the few-discordant sizes (docstring)


def test_paired_bootstrap_covers_the_true_delta() -> None:
    """400 datasets of 200 paired items: base accuracy 0.8, discordance 0.2 split so the true delta is -0.05
    (b rate 0.125, c rate 0.075); the 95% percentile interval must cover -0.05 in 92-97.5% of them."""
    rng = np.random.default_rng(46)
    n, datasets, true_delta = 200, 400, -0.05
    covered = 0
    for seed in range(datasets):
        # per item: concordant right (0.8 - 0.125), lost (0.125), gained (0.075), concordant wrong (the rest)
        kind = rng.choice(4, size=n, p=[0.675, 0.125, 0.075, 0.125])
        base = (kind == 0) | (kind == 1)
        cand = (kind == 0) | (kind == 2)
        iv = bootstrap_accuracy_delta(base, cand, n_resamples=1000, seed=seed)
        covered += iv.low <= true_delta <= iv.high
    rate = covered / datasets
    print(f"\npaired bootstrap 95% interval covered the true delta in {covered}/{datasets} = {rate:.3f}")
    assert 0.92 <= rate <= 0.975
