"""JUnit XML for CI systems: one testcase per candidate x pack x rule, failures
carrying the measured value; what the verdict cannot vouch for (a gap in the
data, a rule that could not be evaluated) is a testcase in error, so a CI that
counts only failures still goes red. Built with ElementTree so every string is
escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from evalrun.evals.verdict import STATUS_TEXT, Verdict
from evalrun.reports.output import write_atomic
from evalrun.reports.summary import rule_text


def junit_xml(verdicts: list[Verdict], seconds: float = 0.0) -> str:
    failures = sum(len(v.failed) for v in verdicts)
    errors = sum(len(v.unevaluated) + len(v.gaps) for v in verdicts)
    tests = sum(len(v.rules) + len(v.gaps) for v in verdicts)
    root = ET.Element("testsuites", name="evalrun", tests=str(tests), failures=str(failures), errors=str(errors),
                      time=f"{seconds:.3f}")
    for v in verdicts:
        suite = ET.SubElement(root, "testsuite", name=f"evalrun.{v.candidate}", tests=str(len(v.rules) + len(v.gaps)),
                              failures=str(len(v.failed)), errors=str(len(v.unevaluated) + len(v.gaps)), skipped="0",
                              time="0")
        ET.SubElement(ET.SubElement(suite, "properties"), "property", name="verdict", value=STATUS_TEXT[v.status])
        for r in v.rules:
            case = ET.SubElement(suite, "testcase", classname=f"evalrun.{v.candidate}.{r.pack}", name=r.rule, time="0")
            if r.status == "fail":
                failure = ET.SubElement(case, "failure", message=rule_text(r), type="GateRuleFailed")
                failure.text = rule_text(r)
            elif r.status == "incomplete":
                error = ET.SubElement(case, "error", message=rule_text(r), type="RuleNotEvaluated")
                error.text = rule_text(r)
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
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_junit(verdicts: list[Verdict], path: str | Path, seconds: float = 0.0) -> Path:
    return write_atomic(path, junit_xml(verdicts, seconds))
