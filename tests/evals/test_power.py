"""The harmful-flip statistics against values computed independently: the hypergeometric
tail by hand, closed forms for zero-flip rules, and simulation for the noise-aware test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalrun.evals.stats import FlipTest, Scope, detectable_rate, fisher_greater, items_needed, pack_power


def _hypergeom_tail(x: int, n: int, y: int, m: int) -> float:
    """P(X >= x) for X the candidate's share of the x + y flips under equal rates, by math.comb."""
    k, total = x + y, n + m
    return sum(math.comb(n, i) * math.comb(m, k - i) for i in range(x, min(n, k) + 1)) / math.comb(total, k)


@pytest.mark.parametrize("x,n,y,m", [(3, 200, 1, 600), (1, 100, 0, 300), (5, 50, 2, 150), (0, 10, 0, 10),
                                     (4, 300, 6, 900)])
def test_fisher_one_sided_p_is_the_hypergeometric_tail(x: int, n: int, y: int, m: int) -> None:
    assert fisher_greater(x, n, y, m) == pytest.approx(_hypergeom_tail(x, n, y, m), rel=1e-9)


@pytest.mark.parametrize("n,r", [(13, 0.2), (300, 0.005), (300, 0.02), (1, 0.5)])
def test_zero_flip_rule_power_is_the_closed_form(n: int, r: float) -> None:
    test = FlipTest(limit=0, alpha=0.05)
    assert test.critical(n) == 1
    assert test.power(n, r) == pytest.approx(1 - (1 - r) ** n, rel=1e-12)


def test_a_tolerance_of_k_flips_needs_k_plus_one() -> None:
    test = FlipTest(limit=2, alpha=0.05)
    n, r = 200, 0.01
    by_hand = 1 - sum(math.comb(n, i) * r ** i * (1 - r) ** (n - i) for i in range(3))
    assert test.critical(n) == 3 and test.power(n, r) == pytest.approx(by_hand, rel=1e-9)
    assert test.critical(2) is None and test.power(2, 0.9) == 0.0  # two fields can never exceed a limit of 2


def test_noise_aware_rule_fails_only_beyond_the_a_a_rate() -> None:
    test = FlipTest(limit=0, alpha=0.05, aa_flips=3, aa_trials=600)  # 0.5% noise
    assert not test.fails(1, 200)  # one flip in 200 is what noise makes
    assert test.fails(8, 200)  # 4% is not
    x_star = test.critical(200)
    assert x_star is not None and test.fails(x_star, 200) and not test.fails(x_star - 1, 200)
    assert test.p_value(x_star, 200) < 0.05 <= test.p_value(x_star - 1, 200)


@pytest.mark.parametrize("rate", [0.0, 0.01, 0.03])
def test_noise_aware_power_matches_simulation(rate: float) -> None:
    """Exact power against 20,000 simulated candidates with the A/A noise plus `rate`."""
    test = FlipTest(limit=0, alpha=0.05, aa_flips=2, aa_trials=500)
    n = 250
    rng = np.random.default_rng(7)
    q = 1 - (1 - 2 / 500) * (1 - rate)
    draws = rng.binomial(n, q, size=20_000)
    simulated = np.mean([test.fails(int(x), n) for x in draws])
    assert test.power(n, rate) == pytest.approx(simulated, abs=0.012)


def test_noise_aware_false_alarms_stay_below_alpha() -> None:
    """Rate 0: the candidate flips exactly as often as the A/A replicates; the exact test is conservative."""
    test = FlipTest(limit=0, alpha=0.05, aa_flips=4, aa_trials=800)
    assert test.power(300, 0.0) <= 0.05


def test_detectable_rate_of_a_zero_flip_rule() -> None:
    for n in (13, 299, 1000):
        scopes = [Scope("max_harmful_flips[amount]", FlipTest(0, 0.05), n)]
        assert detectable_rate(scopes, 0.95) == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-6)
    assert detectable_rate([Scope("r", FlipTest(0, 0.05), 0)], 0.95) is None


def test_a_pack_fails_when_any_rule_fails() -> None:
    scopes = [Scope("a", FlipTest(0, 0.05), 40), Scope("b", FlipTest(0, 0.05), 60)]
    assert pack_power(scopes, 0.01) == pytest.approx(1 - 0.99 ** 100, rel=1e-12)


def test_items_needed_for_one_percent() -> None:
    """1 - 0.99^n >= 0.95 first at n = 299 fields; at 11 watched fields per 12 items that is 327 items."""
    one = [Scope("r", FlipTest(0, 0.05), 12)]
    assert items_needed(one, 12, 0.01, 0.95) == 299
    part = [Scope("r", FlipTest(0, 0.05), 11)]
    assert items_needed(part, 12, 0.01, 0.95) == 327
    assert items_needed([Scope("r", FlipTest(0, 0.05), 0)], 12, 0.01) is None
