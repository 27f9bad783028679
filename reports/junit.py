"""JUnit XML for CI systems: one testcase per candidate x pack x rule, failures
carrying the measured value. Built with ElementTree so every string is escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from evals.gate import Verdict
from reports.summary import rule_text


def render_junit(verdicts: list[Verdict], path: str | Path, seconds: float = 0.0) -> None:
    failures = sum(len(v.failed) for v in verdicts)
    tests = sum(len(v.rules) for v in verdicts)
    root = ET.Element("testsuites", name="evalrun", tests=str(tests), failures=str(failures), errors="0",
                      time=f"{seconds:.3f}")
    for v in verdicts:
        suite = ET.SubElement(root, "testsuite", name=f"evalrun.{v.candidate}", tests=str(len(v.rules)),
                              failures=str(len(v.failed)), errors="0", skipped="0", time="0")
        for r in v.rules:
            case = ET.SubElement(suite, "testcase", classname=f"evalrun.{v.candidate}.{r.pack}", name=r.rule, time="0")
            if not r.passed:
                failure = ET.SubElement(case, "failure", message=rule_text(r), type="GateRuleFailed")
                failure.text = rule_text(r)
            else:
                ET.SubElement(case, "system-out").text = rule_text(r)
        if v.notes:
            ET.SubElement(suite, "system-out").text = "\n".join(v.notes)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
