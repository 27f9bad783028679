"""Pairing a candidate run with its baseline item by item: flips, transitions, agreement, breakdowns, statistics.

Items pair by id; a differing prompt hash is refused rather than quietly wrong, and items missing from either
side are reported, never dropped."""

from __future__ import annotations

from collections import Counter
import dataclasses
from dataclasses import dataclass, field, replace

import numpy as np

from evalrun.contract.errors import UsageError
from evalrun.evals import stats
from evalrun.evals.stats import bootstrap_recovery, recovery as recovery_share
from evalrun.evals.compare._buckets import length_bucket
from evalrun.evals.compare._field_table import FieldDelta, FieldTable
from evalrun.evals.scoring import ScoredItem, field_counts, micro_f1
from evalrun.contract.types import CORRECT_OUTCOMES, ItemMeta, flip


class PairingError(UsageError):
    """The two runs cannot be compared item by item."""


@dataclass
class Flip:
    """One field that was correct at baseline and is not in the candidate (or the reverse)."""

    item_id: str
    pack: str
    field: str
    kind: str
    gold: str | None
    baseline_outcome: str
    candidate_outcome: str
    baseline_value: str | None
    candidate_value: str | None
    subcode: str | None
    candidate_output: str | None
    meta: ItemMeta = dataclasses.field(default_factory=ItemMeta)  # `field` is the attribute above
    # (re-asks that reproduced the flip, re-asks), when the gate's `confirm` re-asked the item
    confirmations: tuple[int, int] | None = None
    # a control run (compare --control): did it lose this field too (None: no control), and its answer
    in_control: bool | None = None
    control_value: str | None = None

    @property
    def confirmed(self) -> bool | None:
        """None: not re-asked; True: the flip reproduced in the majority of re-asks."""
        return None if self.confirmations is None else 2 * self.confirmations[0] > self.confirmations[1]

    @property
    def key(self) -> tuple[str, str]:
        return (self.item_id, self.field)


@dataclass
class Breakdown:
    """Accuracy of both runs within one slice of a pack (a length bucket, a depth)."""

    dimension: str
    value: str
    n: int = 0
    baseline_correct: int = 0
    candidate_correct: int = 0

    @property
    def baseline_accuracy(self) -> float:
        return self.baseline_correct / self.n if self.n else 0.0

    @property
    def candidate_accuracy(self) -> float:
        return self.candidate_correct / self.n if self.n else 0.0


@dataclass
class PackStats:
    """Paired statistics of one pack: item accuracy and micro-F1 deltas with intervals."""

    paired: stats.PairedStats
    f1_interval: stats.Interval
    by_kind_p: dict[str, float]  # McNemar mid-p per field type, on field-level discordant pairs
    # candidate accuracy / baseline accuracy with its paired bootstrap interval; None: baseline scored 0
    recovery: stats.Interval | None = None

    @property
    def interval(self) -> stats.Interval:
        return self.paired.interval

    @property
    def mde(self) -> float:
        return self.paired.mde


@dataclass(frozen=True)
class PackComparison:
    """One pack's paired items, built once by `pair`; the per-item lists are aligned with `item_ids`."""

    pack: str
    item_ids: list[str] = field(default_factory=list)
    base_ok: list[bool] = field(default_factory=list, repr=False)
    cand_ok: list[bool] = field(default_factory=list, repr=False)
    base_counts: list[tuple[int, int, int]] = field(default_factory=list, repr=False)
    cand_counts: list[tuple[int, int, int]] = field(default_factory=list, repr=False)
    harmful: list[Flip] = field(default_factory=list)
    helpful: list[Flip] = field(default_factory=list)
    errors: int = 0
    identical_outputs: int = 0
    transitions: Counter[tuple[str, str]] = field(default_factory=Counter)  # (baseline outcome, candidate outcome) -> fields
    first_divergence: list[int] = field(default_factory=list)  # token index of first difference, per differing pair
    # per (field name, type), on the paired items: how often it was asked; one name may carry several types
    # across items (a needle's `value` is a number in some, an amount in others)
    field_paired: Counter[tuple[str, str]] = field(default_factory=Counter)
    right_fields: list[tuple[str, str, str]] = field(default_factory=list)  # (item, name, type) right at baseline
    breakdowns: dict[tuple[str, str], Breakdown] = field(default_factory=dict)
    stats: PackStats | None = None
    # the candidate's re-asks (the gate's `confirm`): (item id, field) -> (re-asks right, re-asks)
    reasked: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    # the paired per-field table (evals.compare), one row per field name, sorted by name
    fields: list[FieldDelta] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.item_ids)

    @property
    def baseline_correct(self) -> int:
        return sum(self.base_ok)

    @property
    def candidate_correct(self) -> int:
        return sum(self.cand_ok)

    @property
    def baseline_accuracy(self) -> float:
        return self.baseline_correct / self.n if self.n else 0.0

    @property
    def candidate_accuracy(self) -> float:
        return self.candidate_correct / self.n if self.n else 0.0

    @property
    def field_names(self) -> set[str]:
        return {name for name, _ in self.field_paired}

    @property
    def delta_points(self) -> float:
        return 100.0 * (self.candidate_accuracy - self.baseline_accuracy)

    @property
    def recovery(self) -> float | None:
        """Candidate accuracy / baseline accuracy (1.0: all recovered); None when the baseline scored 0."""
        return recovery_share(self.baseline_accuracy, self.candidate_accuracy)

    @property
    def f1_delta_points(self) -> float:
        return 100.0 * (self.candidate_f1 - self.baseline_f1)

    @property
    def baseline_f1(self) -> float:
        return _micro_f1(self.base_counts)

    @property
    def candidate_f1(self) -> float:
        return _micro_f1(self.cand_counts)

    @property
    def baseline_found(self) -> tuple[int, int]:
        """(fields the baseline found, fields with a gold value): micro-F1 is 0 exactly when the first is 0."""
        tp = sum(c[0] for c in self.base_counts)
        return tp, tp + sum(c[2] for c in self.base_counts)

    @property
    def harmful_items(self) -> int:
        return len({f.item_id for f in self.harmful})

    @property
    def helpful_items(self) -> int:
        return len({f.item_id for f in self.helpful})

    @property
    def agreement(self) -> float:
        return self.identical_outputs / self.n if self.n else 0.0

    @property
    def speed_only(self) -> bool:
        """The pack's items ask for no fields (e.g. `latency`): nothing to score, no accuracy claim."""
        return self.n > 0 and not self.field_paired

    def lost_items(self) -> list[str]:
        return [i for i, b, c in zip(self.item_ids, self.base_ok, self.cand_ok) if b and not c]


@dataclass
class Comparison:
    baseline: str
    candidate: str
    packs: list[PackComparison]
    missing_in_candidate: list[str]
    missing_in_baseline: list[str]

    @property
    def harmful(self) -> list[Flip]:
        return [f for p in self.packs for f in p.harmful]

    @property
    def helpful(self) -> list[Flip]:
        return [f for p in self.packs for f in p.helpful]


def _micro_f1(counts: list[tuple[int, int, int]]) -> float:
    tp, fp, fn = (sum(c[i] for c in counts) for i in range(3))
    return micro_f1(tp, fp, fn)


def _counts(item: ScoredItem) -> tuple[int, int, int]:
    """(tp, fp, fn) of one item, counted as in evals.scoring."""
    fields = [field_counts(s.outcome, item.golds.get(n) is not None) for n, s in item.fields.items()]
    tp, fp, fn = (sum(c[i] for c in fields) for i in range(3))
    return tp, fp, fn


def display_value(item: ScoredItem, name: str) -> str | None:
    """What a reviewer compares with the gold: the parsed value, a failed generation's error, else the raw answer."""
    if item.error is not None:
        return f"error: {item.error}"
    score = item.fields.get(name)
    if score is None:
        return None
    free_text = item.answer_format != "json"
    if score.pred_norm is not None and score.outcome != "missing" and not (free_text and score.subcode == "unparseable"):
        return score.pred_norm
    return item.output if free_text else None


def _flip(base: ScoredItem, cand: ScoredItem, name: str) -> Flip:
    return Flip(
        item_id=base.item_id, pack=base.pack, field=name, kind=base.kinds[name], gold=base.golds[name],
        baseline_outcome=base.fields[name].outcome, candidate_outcome=cand.fields[name].outcome,
        baseline_value=display_value(base, name), candidate_value=display_value(cand, name),
        subcode=cand.fields[name].subcode, candidate_output=cand.output, meta=base.meta,
    )


def slices(meta: ItemMeta) -> list[tuple[str, str]]:
    """The (dimension, bucket) breakdowns an item counts in: its context length and its depth, where it has them."""
    out = []
    tokens = meta.target_tokens or meta.context_tokens
    if isinstance(tokens, int):
        out.append(("context", length_bucket(tokens)))
    depth = meta.depth if meta.depth is not None else meta.field_depth
    if isinstance(depth, (int, float)):
        out.append(("depth", f"{float(depth):.2f}"))
    return out


def _first_divergence(a: list[int] | None, b: list[int] | None) -> int | None:
    if a is None or b is None:
        return None
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b)) if len(a) != len(b) else None


def _pack(name: str, pairs: list[tuple[ScoredItem, ScoredItem]], confidence: float, n_resamples: int,
          seed: int) -> PackComparison:
    pc = PackComparison(name, [b.item_id for b, _ in pairs], [b.correct for b, _ in pairs],
                        [c.correct for _, c in pairs], [_counts(b) for b, _ in pairs], [_counts(c) for _, c in pairs])
    table = FieldTable(name)
    discordant: dict[str, list[int]] = {}  # per field type: harmful, helpful field-level pairs (McNemar)
    identical = errors = 0
    for base, cand in pairs:
        errors += cand.error is not None
        table.add(base, cand)
        if base.error is None and cand.error is None and base.output == cand.output:
            identical += 1
        elif (pos := _first_divergence(base.output_ids, cand.output_ids)) is not None:
            pc.first_divergence.append(pos)
        for dim, value in slices(base.meta):
            b = pc.breakdowns.setdefault((dim, value), Breakdown(dim, value))
            b.n += 1
            b.baseline_correct += base.correct
            b.candidate_correct += cand.correct
        for field_name, bscore in base.fields.items():
            kind = base.kinds[field_name]
            cscore = cand.fields.get(field_name)
            c_outcome = cscore.outcome if cscore else "missing"
            pc.transitions[(bscore.outcome, c_outcome)] += 1
            pc.field_paired[(field_name, kind)] += 1
            if bscore.outcome in CORRECT_OUTCOMES:
                pc.right_fields.append((base.item_id, field_name, kind))
            disc = discordant.setdefault(kind, [0, 0])
            direction = flip(bscore.outcome, c_outcome)
            if direction:
                (pc.harmful if direction == 1 else pc.helpful).append(_flip(base, cand, field_name))
                disc[0 if direction == 1 else 1] += 1
    stats_ = None if pc.speed_only else _compute_stats(pc, discordant, confidence, n_resamples, seed)
    return replace(pc, errors=errors, identical_outputs=identical, stats=stats_,
                   fields=table.rows(stats_.interval if stats_ else None))


def _compute_stats(pc: PackComparison, discordant: dict[str, list[int]], confidence: float, n_resamples: int,
                   seed: int) -> PackStats:
    base_ok = np.asarray(pc.base_ok, dtype=float)
    cand_ok = np.asarray(pc.cand_ok, dtype=float)
    paired = stats.summarize_paired(base_ok, cand_ok, n_resamples=n_resamples, confidence=confidence, seed=seed)
    f1 = stats.bootstrap_micro_f1_delta(
        np.asarray(pc.base_counts, dtype=float).reshape(-1, 3), np.asarray(pc.cand_counts, dtype=float).reshape(-1, 3),
        n_resamples=n_resamples, confidence=confidence, seed=seed,
    )
    by_kind = {k: stats.mcnemar_midp(b, c) for k, (b, c) in sorted(discordant.items())}
    ratio = bootstrap_recovery(base_ok, cand_ok, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return PackStats(paired, f1, by_kind, ratio)


def attribute(comparison: Comparison, control: list[ScoredItem] | None) -> None:
    """Mark each harmful flip with whether the control, paired with the same baseline, lost that field on
    that item too (the kernel, the engine, the noise) or not (the flag only); the one place it is set."""
    by_id = {s.item_id: s for s in control or []}
    if not by_id:
        return
    for f in comparison.harmful:
        ctrl = by_id.get(f.item_id)
        score = ctrl.fields.get(f.field) if ctrl is not None else None
        f.in_control = None if ctrl is None else flip(f.baseline_outcome, score.outcome if score else "missing") == 1
        f.control_value = None if ctrl is None else display_value(ctrl, f.field)


def pair(
    baseline: list[ScoredItem], candidate: list[ScoredItem], baseline_name: str, candidate_name: str,
    confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
) -> Comparison:
    base_by_id = {s.item_id: s for s in baseline}
    cand_by_id = {s.item_id: s for s in candidate}
    mismatched = [i for i in base_by_id if i in cand_by_id and base_by_id[i].prompt_hash != cand_by_id[i].prompt_hash]
    if mismatched:
        raise PairingError(
            f"{candidate_name} vs {baseline_name}: {len(mismatched)} item(s) have different prompts under the same id "
            f"(e.g. {mismatched[0]}); the runs asked different questions and cannot be compared. "
            "Use the same packs and parameters in both configs."
        )
    other_fields = [i for i in base_by_id if i in cand_by_id and base_by_id[i].fields.keys() != cand_by_id[i].fields.keys()]
    if other_fields:
        b, c = base_by_id[other_fields[0]], cand_by_id[other_fields[0]]
        raise PairingError(
            f"{candidate_name} vs {baseline_name}: {len(other_fields)} item(s) are scored on other fields under the "
            f"same id (e.g. {other_fields[0]}: {', '.join(b.fields)} vs {', '.join(c.fields)}); score both runs "
            "the same way (the same pack field schema, or the same `evalrun import --field` mapping)."
        )
    by_pack: dict[str, list[tuple[ScoredItem, ScoredItem]]] = {}
    for item_id, base in base_by_id.items():
        if item_id in cand_by_id:
            by_pack.setdefault(base.pack, []).append((base, cand_by_id[item_id]))
    return Comparison(
        baseline=baseline_name, candidate=candidate_name,
        packs=[_pack(name, by_pack[name], confidence, n_resamples, seed) for name in sorted(by_pack)],
        missing_in_candidate=sorted(set(base_by_id) - set(cand_by_id)),
        missing_in_baseline=sorted(set(cand_by_id) - set(base_by_id)),
    )
