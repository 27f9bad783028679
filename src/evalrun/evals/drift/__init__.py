"""Teacher-forced drift: a candidate reading the baseline's answers under its own acceleration, and how far its
next-token distributions moved."""

from __future__ import annotations

from evalrun.evals.drift._drift import Drift, Figure, FlipNote, PackDrift, token_drift
from evalrun.evals.drift._drift import TokenDrift, mean_interval

__all__ = ["Drift", "Figure", "FlipNote", "PackDrift", "TokenDrift", "mean_interval", "token_drift"]
