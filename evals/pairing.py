"""Pairing a candidate run with its baseline item by item, and finding the flips.

Items pair by id; a differing prompt hash means the two runs asked different
questions, so the comparison is refused rather than quietly wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evals.scoring import ScoredItem
from evals.types import CORRECT_OUTCOMES


class PairingError(Exception):
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
    meta: dict = field(default_factory=dict)


@dataclass
class PackComparison:
    pack: str
    n: int
    baseline_correct: int
    candidate_correct: int
    harmful: list[Flip]
    helpful: list[Flip]
    errors: int
    identical_outputs: int

    @property
    def baseline_accuracy(self) -> float:
        return self.baseline_correct / self.n if self.n else 0.0

    @property
    def candidate_accuracy(self) -> float:
        return self.candidate_correct / self.n if self.n else 0.0

    @property
    def delta_points(self) -> float:
        return 100.0 * (self.candidate_accuracy - self.baseline_accuracy)

    @property
    def harmful_items(self) -> int:
        return len({f.item_id for f in self.harmful})

    @property
    def agreement(self) -> float:
        return self.identical_outputs / self.n if self.n else 0.0


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


def _value(item: ScoredItem, name: str) -> str | None:
    """The value a reviewer should see: the parsed value when there is one, else the raw answer."""
    score = item.fields[name]
    if score.pred_norm is not None and score.subcode != "unparseable" and score.outcome != "missing":
        return score.pred_norm
    return item.output


def _flip(base: ScoredItem, cand: ScoredItem, name: str) -> Flip:
    return Flip(
        item_id=base.item_id,
        pack=base.pack,
        field=name,
        kind=base.kinds[name],
        gold=base.golds[name],
        baseline_outcome=base.fields[name].outcome,
        candidate_outcome=cand.fields[name].outcome,
        baseline_value=_value(base, name),
        candidate_value=cand.error if cand.error else _value(cand, name),
        subcode=cand.fields[name].subcode,
        candidate_output=cand.output,
        meta=base.meta,
    )


def pair(baseline: list[ScoredItem], candidate: list[ScoredItem], baseline_name: str, candidate_name: str) -> Comparison:
    base_by_id = {s.item_id: s for s in baseline}
    cand_by_id = {s.item_id: s for s in candidate}
    mismatched = [i for i in base_by_id if i in cand_by_id and base_by_id[i].prompt_hash != cand_by_id[i].prompt_hash]
    if mismatched:
        raise PairingError(
            f"{candidate_name} vs {baseline_name}: {len(mismatched)} item(s) have different prompts under the same id "
            f"(e.g. {mismatched[0]}); the runs asked different questions and cannot be compared. "
            "Use the same packs and parameters in both configs."
        )
    packs: dict[str, PackComparison] = {}
    for item_id, base in base_by_id.items():
        cand = cand_by_id.get(item_id)
        if cand is None:
            continue
        pc = packs.setdefault(base.pack, PackComparison(base.pack, 0, 0, 0, [], [], 0, 0))
        pc.n += 1
        pc.baseline_correct += base.correct
        pc.candidate_correct += cand.correct
        pc.errors += cand.error is not None
        pc.identical_outputs += base.error is None and cand.error is None and base.output == cand.output
        for name in base.fields:
            b_ok = base.fields[name].outcome in CORRECT_OUTCOMES
            c_ok = name in cand.fields and cand.fields[name].outcome in CORRECT_OUTCOMES
            if b_ok and not c_ok:
                pc.harmful.append(_flip(base, cand, name))
            elif c_ok and not b_ok:
                pc.helpful.append(_flip(base, cand, name))
    return Comparison(
        baseline=baseline_name,
        candidate=candidate_name,
        packs=sorted(packs.values(), key=lambda p: p.pack),
        missing_in_candidate=sorted(set(base_by_id) - set(cand_by_id)),
        missing_in_baseline=sorted(set(cand_by_id) - set(base_by_id)),
    )
