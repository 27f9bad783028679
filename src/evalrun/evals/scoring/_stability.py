"""Which baseline answers are stable across K replicates (other batch compositions). Harmful flips are gated only
on fields stable and right at baseline. The A/A flip rate is leave-one-out (errs toward noise); with one
replicate nothing is measured. A field right in k of K is `rated`, for the flip rules (evals.stats)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from evalrun.evals.scoring._scoring import ScoredItem

FieldKey = tuple[str, str]  # (item id, field name)
ScopeKey = tuple[str, str, str]  # (pack, field name, field type)


def _signature(item: ScoredItem, name: str) -> tuple[str, str | None]:
    if item.error is not None:
        return ("error", None)
    score = item.fields.get(name)
    return ("missing", None) if score is None else (score.outcome, score.pred_norm)


@dataclass
class Stability:
    """The baseline's replicates, field by field (`replicates` counts the baseline itself)."""

    replicates: int
    stable_right: set[FieldKey] = field(default_factory=set)
    unstable: set[FieldKey] = field(default_factory=set)
    # unstable fields right in some replicates: (item id, field) -> (pack, field type, right, replicates)
    rated: dict[FieldKey, tuple[str, str, int, int]] = field(default_factory=dict)
    fields: int = 0  # baseline fields looked at
    aa_flips: Counter = field(default_factory=Counter)  # ScopeKey -> leave-one-out flips
    aa_trials: Counter = field(default_factory=Counter)  # ScopeKey -> leave-one-out trials
    # the same for whole items (every field right), per pack: what a noise-aware max_drop tests against
    stable_right_items: set[str] = field(default_factory=set)
    aa_item_flips: Counter = field(default_factory=Counter)
    aa_item_trials: Counter = field(default_factory=Counter)

    @property
    def measured(self) -> bool:
        """Replicates were run, so the gate knows the noise."""
        return self.replicates > 1

    def item_gated(self, item_id: str) -> bool:
        return item_id in self.stable_right_items

    def gated(self, item_id: str, name: str) -> bool:
        return (item_id, name) in self.stable_right

    def aa_counts(self, scopes: Sequence[ScopeKey]) -> tuple[int, int]:
        """(A/A flips, A/A trials) over the given scopes."""
        return sum(self.aa_flips[s] for s in scopes), sum(self.aa_trials[s] for s in scopes)

    def summary(self) -> str:
        if not self.measured:
            return "no baseline replicates: noise not measured, every harmful flip counts"
        flips, trials = sum(self.aa_flips.values()), sum(self.aa_trials.values())
        return (f"{self.replicates} baseline replicates: {self.fields - len(self.unstable)} of {self.fields} fields "
                f"stable, {len(self.unstable)} unstable; A/A harmful-flip rate {flips}/{trials}"
                f" ({100 * flips / trials if trials else 0:.2f}%)")


def _whole_item(out: Stability, base: ScoredItem, copies: list[ScoredItem]) -> None:
    if base.correct and all(c.correct for c in copies):
        out.stable_right_items.add(base.item_id)
    for j, held_out in enumerate(copies):
        others = copies[:j] + copies[j + 1:]
        if others and all(o.correct for o in others):
            out.aa_item_trials[base.pack] += 1
            out.aa_item_flips[base.pack] += not held_out.correct


def stability(replicates: Sequence[Sequence[ScoredItem]]) -> Stability:
    """Stability over the replicates (baseline first); an item a replicate lacks is judged on those that have it."""
    runs = [{s.item_id: s for s in run} for run in replicates]
    out = Stability(len(runs))
    if not runs:
        return out
    for item_id, base in runs[0].items():
        copies = [r[item_id] for r in runs if item_id in r and r[item_id].prompt_hash == base.prompt_hash]
        _whole_item(out, base, copies)
        for name, ftype in base.kinds.items():
            out.fields += 1
            key = (item_id, name)
            if len({_signature(c, name) for c in copies}) > 1:
                out.unstable.add(key)
                right = sum(c.field_right(name) for c in copies)
                if 0 < right < len(copies):
                    out.rated[key] = (base.pack, ftype, right, len(copies))
            elif base.field_right(name):
                out.stable_right.add(key)
            scope = (base.pack, name, ftype)
            for j, held_out in enumerate(copies):
                others = copies[:j] + copies[j + 1:]
                if others and all(o.field_right(name) for o in others):
                    out.aa_trials[scope] += 1
                    out.aa_flips[scope] += not held_out.field_right(name)
    return out
