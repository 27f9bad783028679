"""JUnit XML: a testcase per candidate x pack x rule. What the verdict cannot vouch for is a testcase in
error, so a CI that counts only failures still goes red; a rule that could not fail is skipped, never green.
ElementTree writes control characters as they are, which XML 1.0 forbids, so the document is neutralised."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from evalrun.evals.compare import Comparison
from evalrun.evals.gate import STATUS_TEXT, Verdict
from evalrun.evals.files import write_atomic
from evalrun.reports.text import rule_text, safe_text
from evalrun.reports.view import comparisons_view
from evalrun.reports.view.model import CandidateSection, ReportView


def _properties(suite: ET.Element, section: CandidateSection, view: ReportView) -> None:
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="verdict", value=STATUS_TEXT[section.status])
    if section.verdict is not None:
        ET.SubElement(props, "property", name="summary", value=section.verdict.summary())
    for p in section.packs:
        figures: dict[str, float | None] = {"items": p.n, "identical_outputs": p.identical_outputs,
                                            "harmful_flips": p.harmful_flips, "harmful_items": p.harmful_items}
        if not p.speed_only:
            figures |= {"baseline_accuracy": p.baseline_accuracy, "candidate_accuracy": p.candidate_accuracy,
                        "delta_points": p.delta_points, "delta_ci_low_points": p.ci_low_points,
                        "delta_ci_high_points": p.ci_high_points}
        for key, value in figures.items():
            if value is not None:
                ET.SubElement(props, "property", name=f"{p.pack}.{key}", value=repr(value))
    if view.noise_floor is not None:
        ET.SubElement(props, "property", name="noise_floor.harmful_items", value=str(view.noise_floor.harmful_items))


def junit_xml(view: ReportView | list[Verdict], seconds: float = 0.0) -> str:
    """The XML of a view (or of bare verdicts: the rules and gaps, without per-pack figures)."""
    if not isinstance(view, ReportView):
        view = comparisons_view([Comparison("", v.candidate, [], [], []) for v in view], view)
    verdicts = view.verdicts
    failures = sum(len(v.failed) for v in verdicts)
    errors = sum(len(v.unevaluated) + len(v.gaps) for v in verdicts)
    tests = sum(len(v.rules) + len(v.gaps) for v in verdicts)
    skipped = sum(len(v.untestable) for v in verdicts)
    root = ET.Element("testsuites", name="evalrun", tests=str(tests), failures=str(failures), errors=str(errors),
                      skipped=str(skipped), time=f"{seconds:.3f}")
    for section in view.sections:
        v = section.verdict
        assert v is not None  # candidates are always gated
        suite = ET.SubElement(root, "testsuite", name=f"evalrun.{v.candidate}", tests=str(len(v.rules) + len(v.gaps)),
                              failures=str(len(v.failed)), errors=str(len(v.unevaluated) + len(v.gaps)),
                              skipped=str(len(v.untestable)), time="0")
        _properties(suite, section, view)
        for r in v.rules:
            case = ET.SubElement(suite, "testcase", classname=f"evalrun.{v.candidate}.{r.pack}", name=r.rule, time="0")
            if r.status in ("fail", "incomplete"):
                kind = "GateRuleFailed" if r.status == "fail" else "PackTooSmall" if r.evaluated else "RuleNotEvaluated"
                tag = "failure" if r.status == "fail" else "error"
                ET.SubElement(case, tag, message=rule_text(r), type=kind).text = rule_text(r)
            elif r.status == "untestable":
                ET.SubElement(case, "skipped", message=r.untestable_reason).text = rule_text(r)
            else:
                ET.SubElement(case, "system-out").text = rule_text(r)
        for i, g in enumerate(v.gaps):
            case = ET.SubElement(suite, "testcase", classname=f"evalrun.{v.candidate}.{g.pack}",
                                 name=f"complete_data[{i}]", time="0")
            ET.SubElement(case, "error", message=g.reason, type="IncompleteComparison").text = g.reason
        if v.notes:
            ET.SubElement(suite, "system-out").text = "\n".join(v.notes)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + safe_text(ET.tostring(root, encoding="unicode")) + "\n"


def render_junit(view: ReportView | list[Verdict], path: str | Path, seconds: float = 0.0) -> Path:
    return write_atomic(path, junit_xml(view, seconds))
