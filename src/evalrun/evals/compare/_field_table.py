"""The paired per-field table with a bootstrap interval of each delta, computed once here: the renderers and
heatmaps read it and compute nothing themselves."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from evalrun.contract.types import CORRECT_OUTCOMES, flip
from evalrun.evals import stats
from evalrun.evals.scoring import FieldMetrics, ScoredItem
from evalrun.evals.stats import recovery


def candidate_outcome(c: ScoredItem, name: str) -> str:
    """The candidate's outcome for one field: a generation error is the item's, an absent score is missing."""
    if c.error is not None:
        return "error"
    score = c.fields.get(name)
    return score.outcome if score else "missing"


@dataclass
class FieldDelta:
    """One field of one pack, on the paired items, with a paired bootstrap interval of its delta."""

    pack: str
    field: str
    kind: str
    n: int
    baseline_accuracy: float
    candidate_accuracy: float
    delta_points: float
    ci_low_points: float | None
    ci_high_points: float | None
    baseline_f1: float
    candidate_f1: float
    candidate_drop_rate: float
    candidate_wrong_rate: float
    harmful_flips: int
    helpful_flips: int
    recovery: float | None = None  # candidate accuracy / baseline accuracy; None when the baseline scored 0


@dataclass
class _FieldTally:
    base: FieldMetrics
    cand: FieldMetrics
    base_ok: list[bool] = field(default_factory=list)
    cand_ok: list[bool] = field(default_factory=list)
    flips: list[int] = field(default_factory=list)  # contract.types.flip per paired item


@dataclass
class FieldTable:
    """Per field name of one pack, filled pair by pair (`add`), finished once (`rows`)."""

    pack: str
    _tallies: dict[str, _FieldTally] = field(default_factory=dict)

    def add(self, base: ScoredItem, cand: ScoredItem) -> None:
        for name, bscore in base.fields.items():
            kind = base.kinds.get(name, "")
            t = self._tallies.setdefault(name, _FieldTally(FieldMetrics(name, kind), FieldMetrics(name, kind)))
            present = base.golds.get(name) is not None
            c_out = candidate_outcome(cand, name)
            t.base.add(bscore.outcome, present)
            t.cand.add(c_out, present)
            t.base_ok.append(bscore.outcome in CORRECT_OUTCOMES)
            t.cand_ok.append(c_out in CORRECT_OUTCOMES)
            t.flips.append(flip(bscore.outcome, c_out))

    def rows(self, interval: stats.Interval | None) -> list[FieldDelta]:
        """One row per field, sorted by name; intervals at the pack interval's settings (none without one)."""
        return [_row(self.pack, self._tallies[name], interval) for name in sorted(self._tallies)]


def _row(pack: str, t: _FieldTally, interval: stats.Interval | None) -> FieldDelta:
    b, c = np.asarray(t.base_ok, dtype=float), np.asarray(t.cand_ok, dtype=float)
    low = high = None
    if interval is not None and len(b):
        iv = stats.bootstrap_accuracy_delta(b, c, n_resamples=interval.n_resamples, confidence=interval.confidence,
                                            seed=0)
        low, high = 100.0 * iv.low, 100.0 * iv.high
    bm, cm = t.base, t.cand
    return FieldDelta(
        pack=pack, field=bm.name, kind=bm.kind, n=bm.total, baseline_accuracy=bm.accuracy,
        candidate_accuracy=cm.accuracy, delta_points=100.0 * (cm.accuracy - bm.accuracy),
        ci_low_points=low, ci_high_points=high, baseline_f1=bm.f1, candidate_f1=cm.f1,
        candidate_drop_rate=cm.drop_rate, candidate_wrong_rate=cm.wrong_rate,
        harmful_flips=t.flips.count(1), helpful_flips=t.flips.count(-1), recovery=recovery(bm.accuracy, cm.accuracy),
    )

