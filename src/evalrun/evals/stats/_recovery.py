"""Recovery: the candidate's accuracy as a share of the baseline's, the unit vLLM's and model
cards' quantization tables use ("99.2% recovery"), beside the delta in points, with a paired
bootstrap interval so the `min_recovery` rule is decided on it rather than on a point value."""

from __future__ import annotations

import numpy as np

from evalrun.evals.stats._stats import Interval, _resampled_means

__all__ = ["bootstrap_recovery", "recovery"]


def recovery(base_acc: float, cand_acc: float) -> float | None:
    """Candidate accuracy over baseline accuracy (1.0 = all of it recovered), the ratio vLLM's and model
    cards' quantization tables report as "recovery"; None when the baseline scored nothing."""
    return cand_acc / base_acc if base_acc > 0 else None


def bootstrap_recovery(
    base_correct: np.ndarray,
    cand_correct: np.ndarray,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval | None:
    """Paired percentile bootstrap of the recovery ratio (same resampled items for both arms); a
    resample where the baseline scored nothing has no ratio and counts as 0 (the conservative end).
    None when the baseline scored nothing on the full data. `delta` holds the point ratio."""
    b = np.asarray(base_correct, dtype=float).ravel()
    c = np.asarray(cand_correct, dtype=float).ravel()
    point = recovery(float(b.mean()) if b.size else 0.0, float(c.mean()) if c.size else 0.0)
    if point is None:
        return None
    means = _resampled_means(np.stack([b, c], axis=1), n_resamples, np.random.default_rng(seed))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(means[:, 0] > 0, means[:, 1] / np.where(means[:, 0] > 0, means[:, 0], 1.0), 0.0)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return Interval(point, float(low), float(high), confidence, n_resamples, int(b.size))
