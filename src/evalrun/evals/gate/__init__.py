"""The gate: declarative rules over a comparison (harmful flips, speed, coverage), and the verdict they add up to."""

from __future__ import annotations

from evalrun.evals.gate._verdict import (
    ALL_PACKS, Gap, INCOMPLETE_NOTE, NOTHING_COULD_FAIL, NO_RULE, RuleResult, STATUS_TEXT, SUBSET_TEXT, Status, Verdict,
    overall_counts, overall_exit_code, overall_status, overall_summary, untestable_gaps, worst,
)
from evalrun.evals.gate._drift_rules import DriftRule
from evalrun.evals.gate._coverage import coverage_gaps, plan_gaps, subset_text
from evalrun.evals.gate._flip_rules import rule_key
from evalrun.evals.gate._provenance import NOT_IN_EFFECT, Provenance, instrument_gaps, provenance
from evalrun.evals.gate._speed_rules import evaluate_speed, requests_needed, share_lower_bound
from evalrun.evals.gate._gate import (
    DEFAULT_MAX_HARMFUL, GateConfig, PackRule, acceptance_rule, check_acceptance, check_control, check_gate,
    collapse_rule, evaluate, load_gate, load_gate_file,
)

__all__ = [
    "ALL_PACKS", "DEFAULT_MAX_HARMFUL", "DriftRule", "Gap", "GateConfig", "INCOMPLETE_NOTE", "NOTHING_COULD_FAIL",
    "NOT_IN_EFFECT", "NO_RULE", "PackRule", "Provenance", "RuleResult", "STATUS_TEXT", "SUBSET_TEXT", "Status",
    "Verdict", "acceptance_rule", "collapse_rule", "check_acceptance", "check_control", "check_gate", "coverage_gaps",
    "evaluate", "evaluate_speed", "instrument_gaps", "load_gate", "load_gate_file", "overall_counts",
    "overall_exit_code", "overall_status", "overall_summary", "plan_gaps", "provenance", "requests_needed", "rule_key",
    "share_lower_bound", "subset_text", "untestable_gaps", "worst",
]
