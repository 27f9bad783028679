"""Effective length: the longest context a candidate keeps working at (issue 30, item 4).

NoLiMa's rule (Modarressi et al., 2025): a model's effective length is the longest context length at
which its score stays at or above 85% of its score at the shortest length. Here, per context-length
bucket (evals/compare/_buckets.py, the one definition every slice by length uses), a bucket counts when

- the run's item accuracy there is >= 85% of its accuracy in the shortest bucket, and
- for a candidate with drift (evals/drift/_drift.py), its mean KL over the bucket's items stays at or under the
  upper end of the A/A drift interval (a baseline replicate's mean KL, all packs): beyond it the candidate
  moves the distribution more than batching alone does.

The effective length is the upper edge of the last bucket before the first one that does not count
(each shorter bucket must count too: a model that fails at 2k and recovers at 4k is not effective at
4k). The baseline's is the accuracy rule alone, shown beside the candidate's. With no A/A floor (no
baseline replicate forced) the candidate is judged by the accuracy rule alone, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from evalrun.contract.types import ItemMeta
from evalrun.evals.compare import bucket_edge, edge_label
from evalrun.evals.drift import Drift
from evalrun.evals.scoring import ScoredItem

RATIO = 0.85  # NoLiMa: at least 85% of the shortest bucket's score
NO_FLOOR = "no A/A floor: accuracy rule only"


@dataclass
class Bucket:
    """One context-length bucket of one run."""

    edge: int
    items: int
    accuracy: float
    mean_kl: float | None = None  # over the items with drift records; None without drift
    accuracy_ok: bool = True
    kl_ok: bool | None = None  # None: not judged (no drift, or no A/A floor)

    @property
    def label(self) -> str:
        return edge_label(self.edge)

    @property
    def counts(self) -> bool:
        return self.accuracy_ok and self.kl_ok is not False


@dataclass
class EffectiveLength:
    """A candidate's effective length beside the baseline's (bucket labels; None: not even the shortest)."""

    candidate: str
    buckets: list[Bucket]
    length: str | None
    baseline_length: str | None
    baseline_buckets: list[Bucket] = field(default_factory=list)
    kl_bound: float | None = None  # the A/A mean KL's upper end; None: accuracy rule only

    @property
    def rule(self) -> str:
        base = f"accuracy >= {RATIO:.0%} of the shortest bucket's"
        if self.kl_bound is None:
            return f"{base}; {NO_FLOOR}"
        return f"{base} and mean KL <= {self.kl_bound:.3g} (the A/A drift's upper bound)"

    @property
    def text(self) -> str:
        def say(x: str | None) -> str:
            return x if x is not None else "none (the shortest bucket already fails)"

        if len(self.buckets) < 2:
            one = self.buckets[0].label if self.buckets else "none"
            return f"effective length: one context-length bucket only ({one}): nothing to compare"
        return (f"effective length ({self.rule}): {say(self.length)}, baseline {say(self.baseline_length)}")


def _tokens(meta: ItemMeta) -> int | None:
    tokens = meta.target_tokens or meta.context_tokens
    return tokens if isinstance(tokens, int) else None


def buckets(scored: Iterable[ScoredItem], drift: Drift | None = None, bound: float | None = None) -> list[Bucket]:
    """Accuracy (and mean KL from `drift`'s per-item records) per bucket, shortest first, judged by the rule."""
    by_edge: dict[int, list[ScoredItem]] = {}
    for s in scored:
        tokens = _tokens(s.meta)
        if tokens is not None:
            by_edge.setdefault(bucket_edge(tokens), []).append(s)
    out = []
    for edge in sorted(by_edge):
        rows = by_edge[edge]
        kls = [float(drift.per_item[s.item_id].kl.mean()) for s in rows
               if drift is not None and s.item_id in drift.per_item and drift.per_item[s.item_id].kl.size]
        mean_kl = float(np.mean(kls)) if kls else None
        out.append(Bucket(edge, len(rows), sum(s.correct for s in rows) / len(rows), mean_kl,
                          kl_ok=None if bound is None or mean_kl is None else mean_kl <= bound))
    if out:
        first = out[0].accuracy
        for b in out:
            b.accuracy_ok = b.accuracy >= RATIO * first - 1e-12
    return out


def longest(rows: list[Bucket]) -> str | None:
    """The last bucket of the run of counting buckets from the shortest."""
    found = None
    for b in rows:
        if not b.counts:
            break
        found = b.label
    return found


def effective_length(candidate: str, cand_scored: Iterable[ScoredItem], base_scored: Iterable[ScoredItem],
                     drift: Drift | None) -> EffectiveLength:
    floor = drift.floor_of("all") if drift is not None else None
    bound = floor.high if floor is not None else None
    cand = buckets(cand_scored, drift, bound)
    base = buckets(base_scored)
    return EffectiveLength(candidate, cand, longest(cand), longest(base), base, bound)


__all__ = ["NO_FLOOR", "RATIO", "Bucket", "EffectiveLength", "buckets", "effective_length", "longest"]
