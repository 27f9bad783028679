"""Paired statistics: intervals, tests, recovery, and the power of the harmful-flip rules against noise."""

from __future__ import annotations

from evalrun.evals.stats._stats import (
    Interval, PairedStats, bootstrap_accuracy_delta, bootstrap_median_of_ratios, bootstrap_micro_f1_delta,
    bootstrap_ratio_of_quantiles, bootstrap_recovery, mcnemar_exact, mcnemar_midp, micro_f1, min_detectable_difference,
    paired_bootstrap, percentile, recovery, sign_test, summarize_paired,
)
from evalrun.evals.stats._power import (
    FlipTest, MeasuredPower, RateTest, Scope, Share, Stratum, clopper_pearson, detectable_rate, fisher_greater,
    items_needed, lower_tail, pack_power, rate_test,
)

__all__ = [
    "FlipTest", "Interval", "MeasuredPower", "PairedStats", "RateTest", "Scope", "Share", "Stratum", "clopper_pearson",
    "bootstrap_accuracy_delta", "bootstrap_median_of_ratios", "bootstrap_micro_f1_delta", "bootstrap_ratio_of_quantiles", "bootstrap_recovery",
    "detectable_rate", "fisher_greater", "items_needed", "lower_tail", "mcnemar_exact", "mcnemar_midp", "micro_f1",
    "min_detectable_difference", "pack_power", "paired_bootstrap", "percentile", "rate_test", "recovery",
    "sign_test", "summarize_paired",
]
