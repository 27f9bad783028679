"""Extraction metrics per field and pack, counted as Kleister/DocILE do: a wrong value is a false positive and a
false negative; near matches earn nothing in strict scoring; a generation error drops every gold field."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from evalrun.contract.types import CORRECT_OUTCOMES
from evalrun.evals import stats
from evalrun.evals.scoring._scoring import ScoredItem


def field_counts(outcome: str, gold_present: bool) -> tuple[int, int, int]:
    """(tp, fp, fn) contributed by one field outcome: the one place these rules live."""
    if gold_present:
        if outcome == "correct":
            return 1, 0, 0
        if outcome in ("missing", "error"):
            return 0, 0, 1
        return 0, 1, 1  # wrong_value, near_match, partial (strict scoring)
    if outcome in ("correct_absent", "error"):
        return 0, 0, 0
    return 0, 1, 0  # hallucinated


def micro_f1(tp: int, fp: int, fn: int) -> float:
    """F1 from pooled counts: evals.stats.micro_f1 (the one definition) for one set of counts."""
    return float(stats.micro_f1((tp, fp, fn)))


@dataclass
class FieldMetrics:
    """Counts for one field (or a whole pack) and the rates derived from them."""

    name: str
    kind: str = ""
    tp: int = 0
    fp: int = 0
    fn: int = 0
    gold_present: int = 0
    decoys: int = 0
    correct: int = 0  # correct + correct_absent: the per-field accuracy numerator
    total: int = 0
    missing: int = 0
    wrong: int = 0
    hallucinated: int = 0
    outcomes: Counter = field(default_factory=Counter)

    def add(self, outcome: str, gold_present: bool) -> None:
        tp, fp, fn = field_counts(outcome, gold_present)
        self.tp += tp
        self.fp += fp
        self.fn += fn
        self.total += 1
        self.outcomes[outcome] += 1
        self.correct += outcome in CORRECT_OUTCOMES
        if gold_present:
            self.gold_present += 1
            self.missing += outcome == "missing"
            self.wrong += fp
        else:
            self.decoys += 1
            self.hallucinated += fp

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        return micro_f1(self.tp, self.fp, self.fn)

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    @property
    def drop_rate(self) -> float:
        return self.missing / self.gold_present if self.gold_present else 0.0

    @property
    def wrong_rate(self) -> float:
        return self.wrong / self.gold_present if self.gold_present else 0.0

    @property
    def hallucination_rate(self) -> float:
        return self.hallucinated / self.decoys if self.decoys else 0.0


@dataclass
class PackMetrics:
    pack: str
    items: int
    exact_match: int
    micro: FieldMetrics
    fields: dict[str, FieldMetrics]
    parse_status: Counter

    @property
    def macro_f1(self) -> float:
        scored = [f.f1 for f in self.fields.values() if f.gold_present]
        return sum(scored) / len(scored) if scored else 0.0

    @property
    def exact_match_rate(self) -> float:
        return self.exact_match / self.items if self.items else 0.0


def pack_metrics(scored: list[ScoredItem]) -> dict[str, PackMetrics]:
    """Metrics per pack, with a per-field breakdown keyed by field name."""
    out: dict[str, PackMetrics] = {}
    for s in scored:
        pm = out.setdefault(s.pack, PackMetrics(s.pack, 0, 0, FieldMetrics("*"), {}, Counter()))
        pm.items += 1
        pm.exact_match += s.correct
        if s.parse_status:
            pm.parse_status[s.parse_status] += 1
        for name, score in s.fields.items():
            present = s.golds.get(name) is not None
            pm.micro.add(score.outcome, present)
            pm.fields.setdefault(name, FieldMetrics(name, s.kinds.get(name, ""))).add(score.outcome, present)
    return out
