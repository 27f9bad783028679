"""Plain data views of a comparison shared by the Markdown, JUnit and JSON
renderers, so the three always agree on what they report."""

from __future__ import annotations

from typing import Any

from evalrun.evals.pairing import Comparison, Flip, PackComparison
from evalrun.evals.verdict import STATUS_TEXT, RuleResult, Verdict


def rule_text(r: RuleResult) -> str:
    """One rule as a sentence: what was measured against what, and where the rule came from."""
    origin = ", default rule" if r.origin == "default" else ""
    measured = "not evaluated" if not r.evaluated else f"measured {r.measured:g}"
    return f"{r.rule}: {measured}, threshold {r.comparator} {r.threshold:g} ({r.detail}{origin})"


def verdict_dict(verdict: Verdict) -> dict[str, Any]:
    """The verdict as the JSON output states it (status and exit code included)."""
    return {
        "status": verdict.status,
        "verdict": STATUS_TEXT[verdict.status],
        "passed": verdict.passed,
        "exit_code": verdict.exit_code,
        "rules": [
            {"pack": r.pack, "rule": r.rule, "measured": r.measured if r.evaluated else None,
             "threshold": r.threshold, "comparator": r.comparator, "status": r.status, "passed": r.passed,
             "origin": r.origin, "detail": r.detail}
            for r in verdict.rules
        ],
        "gaps": [{"pack": g.pack, "reason": g.reason, "items": g.items} for g in verdict.gaps],
        "notes": verdict.notes,
    }


def pack_dict(pc: PackComparison) -> dict[str, Any]:
    st = pc.stats
    out: dict[str, Any] = {
        "pack": pc.pack,
        "items": pc.n,
        "speed_only": pc.speed_only,
        "baseline_accuracy": pc.baseline_accuracy,
        "candidate_accuracy": pc.candidate_accuracy,
        "delta_points": pc.delta_points,
        "baseline_micro_f1": pc.baseline_f1,
        "candidate_micro_f1": pc.candidate_f1,
        "f1_delta_points": pc.f1_delta_points,
        "harmful_items": pc.harmful_items,
        "helpful_items": pc.helpful_items,
        "errors": pc.errors,
        "identical_outputs": pc.identical_outputs,
        "agreement": pc.agreement,
        "first_divergent_token": sorted(pc.first_divergence),
        "transitions": [{"baseline": b, "candidate": c, "fields": n} for (b, c), n in sorted(pc.transitions.items())],
        "breakdowns": [
            {"dimension": b.dimension, "value": b.value, "items": b.n,
             "baseline_accuracy": b.baseline_accuracy, "candidate_accuracy": b.candidate_accuracy}
            for b in sorted(pc.breakdowns.values(), key=lambda b: (b.dimension, b.value))
        ],
    }
    if st:
        out["statistics"] = {
            "discordant_baseline_only": st.paired.b,
            "discordant_candidate_only": st.paired.c,
            "mcnemar_p": st.paired.p_value,
            "accuracy_delta_ci_points": [100 * st.interval.low, 100 * st.interval.high],
            "micro_f1_delta_ci_points": [100 * st.f1_interval.low, 100 * st.f1_interval.high],
            "confidence": st.interval.confidence,
            "bootstrap_resamples": st.interval.n_resamples,
            "min_detectable_difference_points": 100 * st.mde,
            "mcnemar_p_by_field_type": st.by_kind_p,
        }
    return out


def flip_dict(f: Flip) -> dict[str, Any]:
    return {
        "item_id": f.item_id, "pack": f.pack, "field": f.field, "type": f.kind, "gold": f.gold,
        "baseline_outcome": f.baseline_outcome, "candidate_outcome": f.candidate_outcome,
        "baseline_value": f.baseline_value, "candidate_value": f.candidate_value, "subcode": f.subcode,
    }


def comparison_dict(comparison: Comparison, verdict: Verdict | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "baseline": comparison.baseline,
        "candidate": comparison.candidate,
        "packs": [pack_dict(pc) for pc in comparison.packs],
        "harmful_flips": [flip_dict(f) for f in comparison.harmful],
        "helpful_flips": [flip_dict(f) for f in comparison.helpful],
        "missing_in_candidate": comparison.missing_in_candidate,
        "missing_in_baseline": comparison.missing_in_baseline,
    }
    if verdict is not None:
        out |= verdict_dict(verdict)
    return out
