"""The JSON report: the view model as data (`report_json`), for machines that read the verdict."""

from __future__ import annotations

import math
from typing import Any

from evalrun.evals.compare import Flip
from evalrun.evals.gate import STATUS_TEXT, RuleResult, Verdict, overall_counts, overall_summary
from evalrun.reports.text import drift_text, rule_text
from evalrun.reports.view.model import CandidateSection, PackRow, ReportView


def verdict_dict(verdict: Verdict) -> dict[str, Any]:
    """The verdict as the JSON output states it (status and exit code included)."""
    return {
        "status": verdict.status,
        "verdict": STATUS_TEXT[verdict.status],
        "passed": verdict.passed,
        "exit_code": verdict.exit_code,
        "summary": verdict.summary(),
        "counts": verdict.rule_counts(),
        "rules": [rule_dict(r) for r in verdict.rules],
        "gaps": [{"pack": g.pack, "reason": g.reason, "items": g.items} for g in verdict.gaps],
        "notes": verdict.notes,
        "power": {pack: {"items": pw.items, "fields": pw.fields, "detectable_rate": pw.rate, "power": pw.power,
                         "noise_aware": pw.noise_aware, "summary": pw.sentence,
                         "measured": pw.measured.model_dump(mode="json") if pw.measured else None}
                  for pack, pw in verdict.power.items()},
        "noise_flips": [flip_dict(f) for f in verdict.noise_flips],
        "unconfirmed_flips": [flip_dict(f) for f in verdict.unconfirmed],
        "stopped": verdict.stopped,
        "replicates": verdict.replicates,
        "subset": verdict.subset,
    }


def rule_dict(r: RuleResult) -> dict[str, Any]:
    """One rule; `passed` is true only for a rule that could fail and did not (status "pass")."""
    measured = r.measured if r.evaluated and math.isfinite(r.measured) else None
    out: dict[str, Any] = {
        "pack": r.pack, "rule": r.rule, "measured": measured, "threshold": r.threshold,
        "comparator": r.comparator, "status": r.status, "passed": r.status == "pass", "origin": r.origin,
        "detail": r.detail, "text": rule_text(r)}
    if r.baseline_right is not None:
        out["baseline_right"], out["in_scope"] = r.baseline_right, r.in_scope
    if r.p_value is not None:
        out["p_value"] = r.p_value
    if r.aa_trials is not None:
        out["aa_flips"], out["aa_trials"] = r.aa_flips, r.aa_trials
    if r.rule == "detect_rate":
        out["items_needed"] = r.items_needed
    return out


def pack_dict(row: PackRow) -> dict[str, Any]:
    return {
        "pack": row.pack, "items": row.n, "speed_only": row.speed_only,
        "baseline_accuracy": row.baseline_accuracy, "candidate_accuracy": row.candidate_accuracy,
        "delta_points": row.delta_points, "delta_ci_points": [row.ci_low_points, row.ci_high_points],
        "recovery": row.recovery, "recovery_ci": [row.recovery_low, row.recovery_high],
        "harmful_flips": row.harmful_flips, "harmful_items": row.harmful_items, "helpful_items": row.helpful_items,
        "errors": row.errors, "identical_outputs": row.identical_outputs, "agreement": row.agreement,
        "aa_harmful_items": row.aa_harmful, "status": row.status, **row.detail,
    }


def flip_dict(f: Flip) -> dict[str, Any]:
    return {
        "item_id": f.item_id, "pack": f.pack, "field": f.field, "type": f.kind, "gold": f.gold,
        "baseline_outcome": f.baseline_outcome, "candidate_outcome": f.candidate_outcome,
        "baseline_value": f.baseline_value, "candidate_value": f.candidate_value, "subcode": f.subcode,
        "confirmations": None if f.confirmations is None else {
            "reproduced": f.confirmations[0], "asked": f.confirmations[1], "confirmed": f.confirmed},
        "in_control": f.in_control, "control_value": f.control_value,
    }


def comparison_dict(section: CandidateSection) -> dict[str, Any]:
    comp = section.comparison
    drift = section.drift
    out: dict[str, Any] = {
        "baseline": comp.baseline,
        "candidate": comp.candidate,
        "packs": [pack_dict(row) for row in section.packs],
        "fields": [vars(f).copy() for f in section.fields],
        "harmful_flips": [flip_dict(f) | ({"drift": drift_text.flip_text(drift, f)} if drift else {})
                          for f in comp.harmful],
        "drift": drift_text.drift_dict(drift) if drift else None,
        "helpful_flips": [flip_dict(f) for f in comp.helpful],
        "missing_in_candidate": comp.missing_in_candidate,
        "missing_in_baseline": comp.missing_in_baseline,
    }
    if section.verdict is not None:
        out |= verdict_dict(section.verdict)
    return out


def report_json(view: ReportView) -> dict[str, Any]:
    """Everything the JSON file says, from the view."""
    nf = view.noise_floor
    return {
        "status": view.status,
        "exit_code": view.exit_code,
        "passed": view.passed,
        "baseline": view.baseline.name,
        "control": view.control.name if view.control else None,
        "summary": overall_summary(view.verdicts),
        "counts": overall_counts(view.verdicts),
        "verdicts": [verdict_dict(v) for v in view.verdicts],
        "comparisons": [comparison_dict(s) for s in view.sections],
        "noise_floor": comparison_dict(view.noise_section) | {
            "harmful_items": nf.harmful_items, "identical_outputs": nf.identical_outputs, "items": nf.items,
            "summary": nf.sentence} if view.noise_section and nf else None,
        "stability": view.stability,
        "drift_note": view.drift_note,
        "speed": view.speed_table.model_dump(mode="json"),
    }
