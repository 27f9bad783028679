"""evals.stats against values computed independently of the implementation:
hand-counted binomials, hand-computed F1, the textbook 2.8*sqrt(d/n) rule,
a naive loop bootstrap, and coverage on data with a known population delta."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.evals.stats import (
    Interval,
    PairedStats,
    bootstrap_accuracy_delta,
    bootstrap_micro_f1_delta,
    mcnemar_exact,
    micro_f1,
    min_detectable_difference,
    paired_bootstrap,
    percentile,
    summarize_paired,
)
from tests.machine import timed, within

# --------------------------------------------------------------------------- McNemar


def _two_sided_binom_half(b: int, c: int) -> float:
    """Exact two-sided p for Binomial(b+c, 1/2): symmetric, so double the smaller tail."""
    n, k = b + c, min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def test_mcnemar_all_one_way():
    assert mcnemar_exact(5, 0) == pytest.approx(2 * 0.5**5)  # 0.0625
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)


def test_mcnemar_no_discordance_and_balanced():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == pytest.approx(1.0)


def test_mcnemar_hand_counted():
    # b=2, c=10: n=12, P(X<=2) = (1 + 12 + 66) / 4096 = 79/4096, two-sided 158/4096
    assert mcnemar_exact(2, 10) == pytest.approx(158 / 4096)
    assert mcnemar_exact(10, 2) == pytest.approx(158 / 4096)
    for b, c in [(1, 8), (7, 13), (20, 9), (0, 1)]:
        assert mcnemar_exact(b, c) == pytest.approx(_two_sided_binom_half(b, c))


def test_mcnemar_rejects_negative():
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)


# --------------------------------------------------------------------------- bootstrap basics


def _paired_sample(rng: np.random.Generator, n: int, p_base=0.8, p_break=0.05, p_fix=0.10):
    """base ~ Bernoulli(p_base); cand flips right->wrong w.p. p_break, wrong->right w.p. p_fix.

    Population delta = (1 - p_base) * p_fix - p_base * p_break.
    """
    base = rng.random(n) < p_base
    u = rng.random(n)
    cand = np.where(base, u >= p_break, u < p_fix)
    return base.astype(float), cand.astype(float)


def test_bootstrap_deterministic_for_seed():
    base, cand = _paired_sample(np.random.default_rng(1), 500)
    a = bootstrap_accuracy_delta(base, cand, n_resamples=300, seed=7)
    b = bootstrap_accuracy_delta(base, cand, n_resamples=300, seed=7)
    c = bootstrap_accuracy_delta(base, cand, n_resamples=300, seed=8)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)


def test_bootstrap_identical_arms_zero_interval():
    x = (np.random.default_rng(2).random(400) < 0.7).astype(float)
    iv = bootstrap_accuracy_delta(x, x.copy(), n_resamples=500)
    assert (iv.delta, iv.low, iv.high) == (0.0, 0.0, 0.0)
    counts = np.random.default_rng(3).integers(0, 4, size=(50, 3))
    iv = bootstrap_micro_f1_delta(counts, counts.copy(), n_resamples=500)
    assert (iv.delta, iv.low, iv.high) == (0.0, 0.0, 0.0)


def test_bootstrap_empty():
    iv = bootstrap_accuracy_delta(np.array([]), np.array([]))
    assert iv == Interval(0.0, 0.0, 0.0, 0.95, 2000, 0)
    iv = bootstrap_micro_f1_delta(np.zeros((0, 3)), np.zeros((0, 3)))
    assert (iv.delta, iv.low, iv.high, iv.n) == (0.0, 0.0, 0.0, 0)


def test_bootstrap_fields_and_point_delta():
    base = np.array([1, 1, 1, 0, 1, 0, 1, 1, 0, 1], dtype=float)  # 7/10
    cand = np.array([1, 0, 1, 1, 1, 1, 1, 1, 1, 1], dtype=float)  # 9/10
    iv = bootstrap_accuracy_delta(base, cand, n_resamples=1000, confidence=0.9, seed=3)
    assert iv.delta == pytest.approx(0.2)
    assert iv.n == 10 and iv.n_resamples == 1000 and iv.confidence == 0.9
    assert -1.0 <= iv.low <= iv.delta <= iv.high <= 1.0


def test_bootstrap_shape_mismatch():
    with pytest.raises(ValueError):
        paired_bootstrap(np.zeros(5), np.zeros(6))
    with pytest.raises(ValueError):
        bootstrap_micro_f1_delta(np.zeros((5, 2)), np.zeros((5, 2)))


# --------------------------------------------------------------------------- micro-F1


def test_micro_f1_point_delta_by_hand():
    # per item (tp, fp, fn)
    base = np.array([[2, 0, 1], [1, 1, 0], [0, 0, 2], [3, 0, 0]])  # tp=6 fp=1 fn=3
    cand = np.array([[3, 0, 0], [1, 0, 0], [1, 1, 1], [2, 1, 1]])  # tp=7 fp=2 fn=2
    f1_base = 2 * 6 / (2 * 6 + 1 + 3)  # 12/16 = 0.75
    f1_cand = 2 * 7 / (2 * 7 + 2 + 2)  # 14/18
    iv = bootstrap_micro_f1_delta(base, cand, n_resamples=200)
    assert iv.delta == pytest.approx(f1_cand - f1_base)
    assert iv.delta == pytest.approx(14 / 18 - 0.75)


def test_micro_f1_function():
    assert micro_f1(np.array([6, 1, 3])) == pytest.approx(0.75)
    # precision/recall form agrees: p = 6/7, r = 6/9
    p, r = 6 / 7, 6 / 9
    assert micro_f1(np.array([6.0, 1.0, 3.0])) == pytest.approx(2 * p * r / (p + r))
    assert micro_f1(np.array([0, 0, 0])) == 0.0
    assert micro_f1(np.array([0, 2, 1])) == 0.0
    np.testing.assert_allclose(micro_f1(np.array([[6, 1, 3], [7, 2, 2]])), [0.75, 14 / 18])


def test_micro_f1_bootstrap_matches_naive_loop():
    """Vectorised interval agrees with a plain per-resample loop (different RNG stream)."""
    rng = np.random.default_rng(11)
    n = 300
    base = rng.integers(0, 5, size=(n, 3))
    cand = base.copy()
    noise = rng.random(n) < 0.2  # some docs: one tp becomes fp+fn on the candidate
    moved = noise & (cand[:, 0] > 0)
    cand[moved, 0] -= 1
    cand[moved, 1] += 1
    cand[moved, 2] += 1

    def f1(c):
        tp, fp, fn = c.sum(axis=0)
        return 2 * tp / (2 * tp + fp + fn)

    ref_rng = np.random.default_rng(12345)
    deltas = []
    for _ in range(3000):
        idx = ref_rng.integers(0, n, size=n)
        deltas.append(f1(cand[idx]) - f1(base[idx]))
    ref_low, ref_high = np.percentile(deltas, [2.5, 97.5])

    iv = bootstrap_micro_f1_delta(base, cand, n_resamples=3000, seed=5)
    assert iv.delta == pytest.approx(f1(cand) - f1(base))
    width = ref_high - ref_low
    assert iv.low == pytest.approx(ref_low, abs=0.1 * width)
    assert iv.high == pytest.approx(ref_high, abs=0.1 * width)


# --------------------------------------------------------------------------- coverage


def test_bootstrap_coverage_nominal():
    p_base, p_break, p_fix = 0.8, 0.05, 0.10
    true_delta = (1 - p_base) * p_fix - p_base * p_break  # 0.02 - 0.04 = -0.02
    data_rng = np.random.default_rng(2024)
    reps, hits = 200, 0
    t0 = time.perf_counter()
    for rep in range(reps):
        base, cand = _paired_sample(data_rng, 400, p_base, p_break, p_fix)
        iv = bootstrap_accuracy_delta(base, cand, n_resamples=500, seed=rep)
        hits += iv.low <= true_delta <= iv.high
    rate = hits / reps
    print(f"coverage {rate:.3f} over {reps} reps in {time.perf_counter() - t0:.2f}s")
    assert 0.88 <= rate <= 0.99


# --------------------------------------------------------------------------- speed


@pytest.mark.slow
def test_bootstrap_speed_10k_items():
    base, cand = _paired_sample(np.random.default_rng(0), 10_000)
    bootstrap_accuracy_delta(base[:100], cand[:100], n_resamples=10)  # warm imports
    with timed() as acc:
        iv = bootstrap_accuracy_delta(base, cand, n_resamples=2000)
    counts_b = np.random.default_rng(1).integers(0, 5, size=(10_000, 3))
    counts_c = np.random.default_rng(2).integers(0, 5, size=(10_000, 3))
    with timed() as f1:
        bootstrap_micro_f1_delta(counts_b, counts_c, n_resamples=2000)
    print(f"10k items x 2000 resamples: accuracy {acc.wall:.3f}s, micro-F1 {f1.wall:.3f}s")
    assert iv.n == 10_000 and iv.low < iv.high
    within(acc, 5.0, "accuracy bootstrap, 10k items x 2000 resamples")
    within(f1, 5.0, "micro-F1 bootstrap, 10k items x 2000 resamples")


# --------------------------------------------------------------------------- properties


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60),
    st.integers(0, 2**32 - 1),
)
def test_bootstrap_properties(pairs, seed):
    base = np.array([p[0] for p in pairs], dtype=float)
    cand = np.array([p[1] for p in pairs], dtype=float)
    iv = bootstrap_accuracy_delta(base, cand, n_resamples=200, seed=seed)
    assert -1.0 <= iv.low <= iv.high <= 1.0
    assert iv.delta == pytest.approx(cand.mean() - base.mean())
    # swapping the arms mirrors the interval (same resamples, negated deltas)
    sw = bootstrap_accuracy_delta(cand, base, n_resamples=200, seed=seed)
    assert sw.low == pytest.approx(-iv.high, abs=1e-12)
    assert sw.high == pytest.approx(-iv.low, abs=1e-12)
    # no discordant pairs -> every resample has delta exactly 0
    if np.array_equal(base, cand):
        assert (iv.low, iv.high) == (0.0, 0.0)


# --------------------------------------------------------------------------- MDE


def test_mde_reference_value():
    # textbook: (1.96 + 0.8416) * sqrt(0.1 / 1000) = 0.02802
    mde = min_detectable_difference(1000, 0.10)
    assert mde == pytest.approx(0.028, rel=0.02)
    assert mde == pytest.approx((1.959964 + 0.841621) * math.sqrt(0.1 / 1000), rel=1e-5)


def test_mde_monotone_and_edges():
    vals = [min_detectable_difference(n, 0.1) for n in (100, 500, 1000, 5000, 20000)]
    assert all(a > b for a, b in zip(vals, vals[1:]))
    assert min_detectable_difference(0, 0.1) == math.inf
    # d = 0 uses the floor 1/n, so the answer is positive and equals d = 1/n
    assert min_detectable_difference(1000, 0.0) == pytest.approx(min_detectable_difference(1000, 0.001))
    assert min_detectable_difference(1000, 0.0) > 0
    # stricter alpha / higher power need a larger difference
    assert min_detectable_difference(1000, 0.1, alpha=0.01) > min_detectable_difference(1000, 0.1)
    assert min_detectable_difference(1000, 0.1, power=0.9) > min_detectable_difference(1000, 0.1)
    with pytest.raises(ValueError):
        min_detectable_difference(100, 1.5)


# --------------------------------------------------------------------------- summary


def test_summarize_paired_by_hand():
    base = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 1], dtype=bool)
    cand = np.array([1, 1, 1, 1, 0, 0, 0, 1, 1, 1], dtype=bool)
    # b: base right & cand wrong = items 4, 5 -> 2; c: reverse = items 7, 8 -> 2
    s = summarize_paired(base, cand, n_resamples=300)
    assert isinstance(s, PairedStats)
    assert (s.n, s.b, s.c) == (10, 2, 2)
    assert s.base_acc == pytest.approx(0.7) and s.cand_acc == pytest.approx(0.7)
    assert s.delta == pytest.approx(0.0)
    assert s.p_value == pytest.approx(1.0)  # 2 vs 2 is perfectly balanced
    assert s.interval.n == 10 and s.interval.n_resamples == 300
    assert s.mde == pytest.approx((1.959964 + 0.841621) * math.sqrt(0.4 / 10), rel=1e-5)


def test_summarize_paired_one_way():
    base = np.ones(50, dtype=int)
    cand = base.copy()
    cand[:6] = 0  # six regressions, no fixes
    s = summarize_paired(base, cand, n_resamples=500)
    assert (s.b, s.c) == (6, 0)
    assert s.delta == pytest.approx(-6 / 50)
    assert s.p_value == pytest.approx(0.5**6)  # McNemar mid-p: the exact 2 * 0.5**6 less P(X = 0)
    assert s.interval.high <= 0.0


def test_summarize_paired_empty():
    s = summarize_paired(np.array([]), np.array([]))
    assert (s.n, s.b, s.c, s.delta, s.p_value) == (0, 0, 0, 0.0, 1.0)
    assert (s.interval.low, s.interval.high) == (0.0, 0.0)
    assert s.mde == math.inf


# --------------------------------------------------------------------------- percentile


def test_percentile_known_values():
    data = list(range(1, 101))  # 1..100
    # linear interpolation: position q/100 * (n-1)
    assert percentile(data, 50) == pytest.approx(50.5)
    assert percentile(data, 95) == pytest.approx(95.05)  # 1 + 0.95 * 99
    assert percentile([3.0, 1.0, 2.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([10.0, 20.0], 95) == pytest.approx(19.5)
    assert percentile([7.0], 95) == 7.0
    assert percentile(data, 0) == 1 and percentile(data, 100) == 100


def test_percentile_empty_and_nan():
    assert percentile([], 50) is None
    assert percentile(np.array([]), 95) is None
    assert percentile([float("nan")], 50) is None
    assert percentile([1.0, float("nan"), 3.0], 50) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        percentile([1.0], 101)
