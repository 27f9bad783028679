"""Teacher-forced drift: how far a candidate's next-token distribution moved from the baseline's on every
token of the baseline's answers, not only where an answer flipped (docs/drift.md, 'The estimator and its
bias'), and the effective length, the longest context a candidate keeps working at (docs/drift.md,
'Effective length'; issue 30, item 4).

The KL per token is exact between the two distributions coarsened to the baseline's top-k ids and "anything
else": a lower bound of the full KL, tight where the top-k holds nearly all the mass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

import numpy as np

from evalrun.evals import stats
from evalrun.evals.compare import Comparison, Flip, bucket_edge, edge_label
from evalrun.contract.types import Generation, Item, ItemMeta
from evalrun.runners.logprobs import ForcedDists, TokenDists

if TYPE_CHECKING:
    from evalrun.evals.scoring import ScoredItem

FRAGILE_MARGIN = 0.2  # baseline top-1 minus top-2 probability below this: the flip happened where it was unsure
_FLOOR = -1e4  # log of a mass that underflowed to 0 in fp32 (keeps the sum finite; exp(-1e4) is 0 anyway)


@dataclass
class TokenDrift:
    """One item's per-token figures (aligned with the baseline's answer tokens)."""

    kl: np.ndarray
    same_top1: np.ndarray
    dp: np.ndarray
    margin: np.ndarray  # baseline's top-1 minus top-2 probability


def token_drift(base: TokenDists, cand: ForcedDists) -> TokenDrift:
    """The estimator (module docstring), in float64 from the stored fp32 logprobs."""
    n = len(cand)
    lb = base.top_logprobs[:n].astype(np.float64)
    lc = np.maximum(cand.at_base_top.astype(np.float64), _FLOOR)
    rb = base.rest_logprob[:n].astype(np.float64)
    rc = np.maximum(cand.rest_logprob.astype(np.float64), _FLOOR)
    pb = np.exp(lb)
    rest = np.where(np.isfinite(rb) & (rb > _FLOOR), np.exp(rb) * (rb - rc), 0.0)
    with np.errstate(invalid="ignore"):  # an id of probability 0 adds 0 log 0 = 0, not NaN
        terms = np.where(pb > 0, pb * (lb - lc), 0.0)
    kl = np.maximum(terms.sum(axis=1) + rest, 0.0)
    second = np.exp(lb[:, 1]) if lb.shape[1] > 1 else np.zeros(n)
    return TokenDrift(kl=kl, same_top1=cand.top1_id == base.top_ids[:n, 0],
                      dp=np.exp(cand.token_logprob.astype(np.float64)) - np.exp(base.logprob[:n].astype(np.float64)),
                      margin=pb[:, 0] - second)


@dataclass
class Figure:
    """A mean over items with its bootstrap interval (low, high)."""

    value: float
    low: float
    high: float


@dataclass
class PackDrift:
    pack: str
    items: int
    tokens: int
    mean_kl: Figure
    p99_kl: float
    max_kl: float
    same_top1: Figure  # share of tokens, 0-1
    mean_dp: Figure


@dataclass
class FlipNote:
    """A harmful flip explained by the baseline's confidence where the answers first parted."""

    item_id: str
    field: str
    position: int | None  # first divergent token, None when the answers' tokens never part
    baseline_top1: float | None
    baseline_top2: float | None
    kl: float | None
    fragile: bool | None

    @property
    def text(self) -> str:
        if self.position is None or self.baseline_top1 is None:
            return "no divergent token with a stored distribution"
        kl = f", KL {self.kl:.3g} there" if self.kl is not None else ""
        if self.fragile:
            return f"fragile: baseline {self.baseline_top1:.2f} vs {self.baseline_top2:.2f} at token {self.position}{kl}"
        return f"confident: baseline {self.baseline_top1:.2f} at token {self.position}, candidate chose another token{kl}"


@dataclass
class Drift:
    """One candidate's drift against the baseline, by pack and overall, and its flips explained."""

    candidate: str
    packs: list[PackDrift]
    overall: PackDrift | None
    flips: list[FlipNote] = field(default_factory=list)
    per_item: dict[str, TokenDrift] = field(default_factory=dict)
    missing: int = 0  # paired items without a usable baseline or candidate record
    # those items' ids, each with why: a drift rule over a scope holding one cannot be decided (rules.py)
    unscored: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what could not be vouched for, one line each
    seconds: float | None = None  # teacher-forced scoring time
    generation_seconds: float | None = None  # the candidate's own generation time
    # the A/A drift floor: a baseline replicate (other batches) read on the baseline's answers, its mean KL
    # per pack ("all" too) with its interval; empty when no replicate was forced (evals/drift/runs.py)
    floor: dict[str, Figure] = field(default_factory=dict)
    floor_run: str | None = None
    effective: EffectiveLength | None = None
    # the baseline's answer tokens as text, one piece per token of `per_item` (evals/drift/runs.py), for the
    # browser's per-token KL strip; shared by every candidate of a report. `tokens_note`: why they are ids instead
    tokens: dict[str, list[str]] = field(default_factory=dict)
    tokens_note: str | None = None

    def floor_of(self, pack: str) -> Figure | None:
        return self.floor.get(pack)

    def flip_note(self, flip: Flip) -> FlipNote | None:
        return next((n for n in self.flips if (n.item_id, n.field) == flip.key), None)


def mean_interval(values: list[float], confidence: float) -> Figure:
    """The mean of per-item values with its bootstrap interval over items: the drift table's and the
    drift rules' one interval for a mean, so a rule never shows other bounds than the table."""
    x = np.asarray(values, dtype=float)
    iv = stats.paired_bootstrap(np.zeros_like(x), x, confidence=confidence)
    return Figure(iv.delta, iv.low, iv.high)


def pack_drift(pack: str, rows: list[TokenDrift], confidence: float) -> PackDrift:
    rows = [r for r in rows if r.kl.size]
    tokens = np.concatenate([r.kl for r in rows]) if rows else np.zeros(0)
    return PackDrift(pack=pack, items=len(rows), tokens=int(tokens.size),
                     mean_kl=mean_interval([float(r.kl.mean()) for r in rows], confidence),
                     p99_kl=stats.percentile(tokens, 99.0) or 0.0, max_kl=float(tokens.max()) if tokens.size else 0.0,
                     same_top1=mean_interval([float(r.same_top1.mean()) for r in rows], confidence),
                     mean_dp=mean_interval([float(r.dp.mean()) for r in rows], confidence))


def _first_divergence(a: list[int], b: list[int]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b)) if len(a) != len(b) else None


def flip_note(flip: Flip, base: TokenDists | None, row: TokenDrift | None,
              base_gen: Generation | None, cand_gen: Generation | None) -> FlipNote:
    pos = None
    if base_gen is not None and cand_gen is not None:
        pos = _first_divergence(list(base_gen.output_ids or []), list(cand_gen.output_ids or []))
    if pos is None or base is None or row is None or pos >= row.kl.size:
        return FlipNote(flip.item_id, flip.field, pos, None, None, None, None)
    top = np.exp(base.top_logprobs[pos].astype(np.float64))
    top2 = float(top[1]) if top.size > 1 else 0.0
    return FlipNote(flip.item_id, flip.field, pos, float(top[0]), top2, float(row.kl[pos]),
                    bool(top[0] - top2 < FRAGILE_MARGIN))


def compute(candidate: str, items: Iterable[Item], base: dict[str, TokenDists], forced: dict[str, ForcedDists],
            comparison: Comparison, base_gens: dict[str, Generation], cand_gens: dict[str, Generation],
            confidence: float = 0.95) -> Drift:
    """Drift over the items both runs answered; an item without both records counts as missing."""
    paired = [it for it in items if it.id in base_gens and it.id in cand_gens and base_gens[it.id].error is None]
    per_item: dict[str, TokenDrift] = {}
    by_pack: dict[str, list[TokenDrift]] = {}
    unscored: dict[str, str] = {}
    for it in paired:
        b, c = base.get(it.id), forced.get(it.id)
        if b is None or c is None or len(c) != len(b):
            unscored[it.id] = "no usable teacher-forced record"
            continue
        row = token_drift(b, c)
        bad = np.flatnonzero(~(np.isfinite(row.kl) & np.isfinite(row.dp)))
        if bad.size:  # a NaN or infinite logprob stored (a model whose logits overflowed): no figure, and why
            unscored[it.id] = f"token {int(bad[0])}'s KL is not a number (a NaN or infinite logprob in a record)"
            continue
        per_item[it.id] = row
        by_pack.setdefault(it.pack, []).append(row)
    packs = [pack_drift(p, rows, confidence) for p, rows in by_pack.items()]
    overall = pack_drift("all", [r for rows in by_pack.values() for r in rows], confidence) if per_item else None
    flips = [flip_note(f, base.get(f.item_id), per_item.get(f.item_id), base_gens.get(f.item_id),
                       cand_gens.get(f.item_id)) for f in comparison.harmful]
    notes = [f"drift: {len(unscored)} of {len(paired)} paired items not measured (measured on {len(per_item)}; "
             f"first: item {k}: {why})" for k, why in list(unscored.items())[:1]]
    return Drift(candidate, packs, overall, flips, per_item, len(unscored), unscored, notes)


RATIO = 0.85  # NoLiMa: at least 85% of the shortest bucket's score
NO_FLOOR = "no A/A floor: accuracy rule only"


@dataclass
class Bucket:

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
