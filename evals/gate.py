"""The gate: rules over a comparison, each with its measured value and threshold.

The default rules are strict on purpose: a pack may not lose accuracy and no
item may flip from correct to anything else (errors included).
"""

from __future__ import annotations

from dataclasses import dataclass

from evals.pairing import Comparison


@dataclass
class RuleResult:
    candidate: str
    pack: str
    rule: str
    measured: float
    threshold: float
    passed: bool
    detail: str = ""


@dataclass
class Verdict:
    candidate: str
    rules: list[RuleResult]
    notes: list[str]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rules)


def default_gate(comparison: Comparison) -> Verdict:
    rules: list[RuleResult] = []
    for pc in comparison.packs:
        rules.append(
            RuleResult(comparison.candidate, pc.pack, "max_drop_points", round(-pc.delta_points, 2), 0.0,
                       pc.delta_points >= 0, "accuracy drop in points (candidate - baseline)")
        )
        rules.append(
            RuleResult(comparison.candidate, pc.pack, "max_harmful_flips", float(pc.harmful_items), 0.0,
                       pc.harmful_items == 0, f"items correct at baseline and not in the candidate ({pc.errors} errors)")
        )
    notes = []
    if comparison.missing_in_candidate:
        notes.append(f"{len(comparison.missing_in_candidate)} baseline item(s) missing from {comparison.candidate}")
        rules.append(RuleResult(comparison.candidate, "*", "missing_items", float(len(comparison.missing_in_candidate)),
                                0.0, False, "items the candidate did not answer"))
    if comparison.missing_in_baseline:
        notes.append(f"{len(comparison.missing_in_baseline)} candidate item(s) missing from the baseline")
    return Verdict(comparison.candidate, rules, notes)
