"""A rule that cannot fail, in every output: the same counts phrase (from the verdict's one
formatter) in the terminal, Markdown, JUnit, JSON and HTML; the rule's "not testable here
(baseline 0 of n)" everywhere, with a look of its own; a verdict where nothing could fail is
INCOMPLETE (exit 4) in all five."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html import unescape

from rich.console import Console

from evalrun.evals import api
from evalrun.evals.gate import NOTHING_COULD_FAIL
from evalrun.reports.formats import junit_xml, render_markdown, render_view, report_json
from evalrun.reports.formats.html import render_html_text
from evalrun.reports.view import build_view
from tests.conftest import DEPTHS, LENGTHS, doc_items, make_run, needle_items

ALL_NEEDLES = {(length, depth, i) for length in LENGTHS for depth in DEPTHS for i in range(2)}
ONE_RIGHT = ALL_NEEDLES - {(512, 0.0, 0)}
AMOUNT_UNTESTABLE = "not testable here (baseline 0 of 1)"


def _outputs(report: "api.CompareReport") -> dict[str, str]:
    view = build_view(report)
    console = Console(record=True, width=250)
    render_view(console, view)
    return {"terminal": console.export_text(), "markdown": render_markdown(view), "junit": junit_xml(view),
            "json": json.dumps(report_json(view)), "html": render_html_text(view)}


def _html_text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _mixed_report() -> "api.CompareReport":
    """The baseline misses the document's amount (its rule cannot fail) and all needles but one."""
    items = needle_items() + doc_items()
    base = make_run("baseline", items, ONE_RIGHT | {"docs"})
    same = make_run("int8kv", items, ONE_RIGHT | {"docs"})
    loses = make_run("int4kv", items, ALL_NEEDLES | {"docs"})  # loses the one needle the baseline found
    return api.compare_results(base, [(same, None), (loses, None)])


def test_the_counts_read_the_same_in_every_output() -> None:
    report = _mixed_report()
    phrases = {"int8kv": "4 of 5 rules passed, 1 not testable here",
               "int4kv": "2 of 5 rules passed, 2 failed, 1 not testable here"}
    assert {v.candidate: v.summary() for v in report.verdicts} == phrases
    overall = "6 of 10 rules passed, 2 failed, 2 not testable here"
    out = _outputs(report)
    terminal = " ".join(out["terminal"].split())
    markdown = out["markdown"].splitlines()
    junit = ET.fromstring(out["junit"])
    data = json.loads(out["json"])
    html = _html_text(out["html"].split('id="verdict"', 1)[1].split("</section>", 1)[0])
    assert markdown[0] == f"## evalrun: ❌ FAIL ({overall})"
    assert data["summary"] == overall and data["counts"] == {"rules": 10, "passed": 6, "failed": 2, "untestable": 2,
                                                            "not_evaluated": 0, "underpowered": 0, "gaps": 0}
    for cand, status, phrase in (("int8kv", "PASS", phrases["int8kv"]), ("int4kv", "FAIL", phrases["int4kv"])):
        assert f"{cand}: {status} ({phrase})" in terminal
        assert any(line.startswith(f"- **{cand}**: ") and line.endswith(f" ({phrase})") for line in markdown)
        suite = next(s for s in junit.findall("testsuite") if s.get("name") == f"evalrun.{cand}")
        assert suite.find("properties/property[@name='summary']").get("value") == phrase
        verdict = next(v for v in data["comparisons"] if v["candidate"] == cand)
        assert verdict["summary"] == phrase
        assert f"{cand} : {status} {phrase}" in html
    # the older spellings are gone from every output
    for key, text in out.items():
        assert not re.search(r"\d+/\d+ rules|rules failed|\(\d+/\d+\)", text), key


def test_an_untestable_rule_is_shown_as_such_and_never_green() -> None:
    out = _outputs(_mixed_report())
    rule = "max_harmful_flips[amount]"
    terminal = [line for line in out["terminal"].splitlines() if rule in line and "docs" in line]
    assert terminal and all(line.lstrip().startswith("NOT TESTABLE") and AMOUNT_UNTESTABLE in line
                            for line in terminal)
    md = out["markdown"]
    assert md.count(f"- docs: {rule}: {AMOUNT_UNTESTABLE}, measured 0, threshold &lt;= 0") == 2
    data = json.loads(out["json"])
    [entry] = [r for r in data["verdicts"][0]["rules"] if r["rule"] == rule]
    assert (entry["status"], entry["passed"], entry["measured"], entry["threshold"]) == ("untestable", False, 0, 0)
    assert (entry["baseline_right"], entry["in_scope"]) == (0, 1) and AMOUNT_UNTESTABLE in entry["text"]
    junit = ET.fromstring(out["junit"])
    skipped = junit.findall(f"testsuite/testcase[@name='{rule}']/skipped")
    assert [s.get("message") for s in skipped] == [AMOUNT_UNTESTABLE] * 2
    assert junit.get("skipped") == "2" and [s.get("skipped") for s in junit.findall("testsuite")] == ["1", "1"]
    assert not junit.findall(f"testsuite/testcase[@name='{rule}']/system-out"), "not reported as a passing case"
    rows = re.findall(r'<tr class="([a-z]+)">\s*<td>[^<]*</td><td>docs</td><td><code>max_harmful_flips\[amount\]'
                      r'</code></td>(.*?)</tr>', out["html"], re.S)
    assert [c for c, _ in rows] == ["untestable", "untestable"]
    assert all('<span class="badge untestable">NOT TESTABLE</span> ' + AMOUNT_UNTESTABLE in body for _, body in rows)
    assert ".badge.untestable { background: var(--untestable)" in out["html"]
    assert "var(--pass)" not in out["html"].split(".badge.untestable", 1)[1].split("}", 1)[0]


def test_a_verdict_where_nothing_could_fail_is_incomplete_everywhere() -> None:
    items = needle_items()
    report = api.compare_results(make_run("baseline", items, ALL_NEEDLES),
                                 [(make_run("int4kv", items, ALL_NEEDLES), None)])
    [v] = report.verdicts
    assert v.status == "incomplete" and report.exit_code == 4
    phrase = "0 of 2 rules passed, 2 not testable here, 1 gap(s) in the data"
    assert v.summary() == phrase
    out = _outputs(report)
    assert f"int4kv: INCOMPLETE ({phrase})" in " ".join(out["terminal"].split())
    assert NOTHING_COULD_FAIL in out["terminal"]
    assert out["markdown"].splitlines()[0] == f"## evalrun: ⚠️ INCOMPLETE ({phrase})"
    assert f"- needle: {NOTHING_COULD_FAIL}" in out["markdown"]
    assert "not testable here (baseline 0 of 12)" in out["markdown"]
    data = json.loads(out["json"])
    assert (data["status"], data["exit_code"], data["passed"]) == ("incomplete", 4, False)
    assert [r["status"] for r in data["verdicts"][0]["rules"]] == ["untestable", "untestable"]
    junit = ET.fromstring(out["junit"])
    assert (junit.get("failures"), junit.get("errors"), junit.get("skipped")) == ("0", "1", "2")
    [error] = junit.findall("testsuite/testcase/error")
    assert error.get("message") == NOTHING_COULD_FAIL and error.get("type") == "IncompleteComparison"
    assert junit.find("testsuite/properties/property[@name='verdict']").get("value") == "INCOMPLETE"
    assert 'id="verdict-text">verdict: INCOMPLETE<' in out["html"]
    assert f"int4kv : INCOMPLETE {phrase}" in _html_text(out["html"])
    assert "no rule could fail" in _html_text(out["html"])  # the incomplete note names this cause too
