"""One verdict, every renderer: a comparison with missing items, a generation
error and a noise floor says the same thing in the terminal, Markdown, JUnit,
JSON and HTML. And a verdict fails closed: nothing paired is never a pass."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from html import unescape
from pathlib import Path

import pytest
from rich.console import Console

from evalrun.evals import api
from evalrun.cli_outputs import Outputs
from evalrun.evals.results import RunResult
from evalrun.evals.speed import speed_table
from evalrun.evals.gate import STATUS_TEXT, Gap, RuleResult, Verdict, worst
from evalrun.reports.text import units
from evalrun.reports.formats import render_view
from evalrun.reports.view import build_view
from tests.conftest import doc_items, needle_items, make_run

ITEMS = needle_items() + doc_items()


def _drop(run: RunResult, ids: list[str]) -> RunResult:
    return replace(run, generations={k: v for k, v in run.generations.items() if k not in ids})


def _with_error(run: RunResult, item_id: str) -> RunResult:
    gens = dict(run.generations)
    gens[item_id] = gens[item_id].model_copy(update={"output": None, "error": "RuntimeError: kv backend failed"})
    return replace(run, generations=gens)


def _render_all(report: "api.CompareReport", tmp: Path) -> dict[str, str]:
    table = speed_table(report)
    console = Console(record=True, width=250)
    render_view(console, build_view(report, speed=table, html=False))
    outputs = Outputs(html=tmp / "r.html", junit=tmp / "j.xml", markdown=tmp / "s.md", json=tmp / "r.json")
    outputs.check()
    assert outputs.write(report, table, 1.0, lambda _: None) == []  # builds its own view: the same numbers
    return {"terminal": console.export_text(), **{k: p.read_text(encoding="utf-8") for k, p in outputs.named().items()}}


def _statuses(texts: dict[str, str], candidate: str) -> dict[str, str]:
    """Each renderer's verdict for `candidate`, read back the way a person or a CI system would."""
    out = {}
    m = re.search(rf"{candidate}: (PASS|FAIL|INCOMPLETE) \(", texts["terminal"])
    out["terminal"] = m.group(1) if m else "?"
    m = re.search(rf"\*\*{candidate}\*\*: \**(pass|FAIL|INCOMPLETE)", texts["--markdown"])
    out["markdown"] = (m.group(1) if m else "?").upper()
    root = ET.fromstring(texts["--junit"])
    suite = next(s for s in root.findall("testsuite") if s.get("name") == f"evalrun.{candidate}")
    out["junit"] = suite.find("properties/property[@name='verdict']").get("value")
    data = json.loads(texts["--json"])
    out["json"] = next(c["verdict"] for c in data["comparisons"] if c["candidate"] == candidate)
    html = unescape(re.sub(r"<[^>]+>", " ", texts["--html"]))
    m = re.search(rf"{candidate} : (PASS|FAIL|INCOMPLETE)", " ".join(html.split()))
    out["html"] = m.group(1) if m else "?"
    return out


def test_every_renderer_shows_the_same_verdict(tmp_path: Path) -> None:
    base = make_run("baseline", ITEMS, set())
    aa = make_run("baseline~r1", ITEMS, set())
    needles = [it.id for it in ITEMS if it.pack == "needle"]
    # misses two needles, one error on a document item: incomplete is outranked by the failure the error causes
    failing = _with_error(_drop(make_run("int4kv", ITEMS, set()), needles[:2]), "docs/INV1/total")
    # identical answers, but three needles have no answer: nothing failed, and it is still not a pass
    partial = _drop(make_run("int8kv", ITEMS, set()), needles[2:5])
    clean = make_run("fp8kv", ITEMS, set())
    report = api.compare_results(base, [(failing, None), (partial, None), (clean, None)], noise_floor=aa)
    assert [v.status for v in report.verdicts] == ["fail", "incomplete", "pass"]
    assert report.status == "fail" and report.exit_code == 1

    texts = _render_all(report, tmp_path)
    for name, expected in (("int4kv", "FAIL"), ("int8kv", "INCOMPLETE"), ("fp8kv", "PASS")):
        assert set(_statuses(texts, name).values()) == {expected}, (name, _statuses(texts, name))
    data = json.loads(texts["--json"])
    assert data["status"] == "fail" and data["exit_code"] == 1
    partial_json = next(c for c in data["comparisons"] if c["candidate"] == "int8kv")
    assert [g["items"] for g in partial_json["gaps"]] == [3]
    assert "needle: 9 of 12 items paired" in partial_json["gaps"][0]["reason"]
    for key in ("terminal", "--markdown", "--junit", "--html"):
        assert "needle: 9 of 12 items paired" in unescape(texts[key]), key
    root = ET.fromstring(texts["--junit"])
    assert int(root.get("errors")) == 2  # a gap each for int4kv and int8kv
    assert int(root.get("failures")) == sum(len(v.failed) for v in report.verdicts) > 0
    assert "Noise floor" in texts["--markdown"]
    _assert_same_numbers(report, texts)


# --------------------------------------------------------------------------- the same numbers everywhere


def _expected(report: "api.CompareReport") -> dict[tuple[str, str], dict[str, object]]:
    """Per (candidate, pack), from the comparison itself: what every renderer must show."""
    out = {}
    for comp in report.comparisons:
        for pc in comp.packs:
            iv = pc.stats.interval
            out[(comp.candidate, pc.pack)] = {
                "items": pc.n, "baseline": pc.baseline_accuracy, "candidate": pc.candidate_accuracy,
                "delta": pc.delta_points, "low": 100 * iv.low, "high": 100 * iv.high,
                "harmful": pc.harmful_items, "identical": pc.identical_outputs,
                "first": sorted(pc.first_divergence),
                "recovery": pc.candidate_accuracy / pc.baseline_accuracy if pc.baseline_accuracy else None,
            }
    return out


def _as_text(e: dict[str, object]) -> dict[str, str]:
    """The figures as the text renderers spell them (reports.text.units)."""
    return {"items": str(e["items"]), "baseline": units.pct(e["baseline"]), "candidate": units.pct(e["candidate"]),
            "delta": units.num(e["delta"], 1, True), "ci": units.ci(e["low"], e["high"]),
            "harmful": str(e["harmful"]), "identical": units.pct(e["identical"] / e["items"], 0),
            "first": units.divergence_cell(e["first"], e["identical"], e["items"]),
            "recovery": units.pct(e["recovery"])}


def _terminal_rows(text: str, candidate: str) -> dict[str, list[str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip() == f"{candidate} vs baseline")
    rows = {}
    for line in lines[start + 1:]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            rows[cells[0]] = cells
    return rows


def _markdown_rows(text: str, candidate: str) -> dict[str, list[str]]:
    block = text.split(f"### {candidate} vs baseline", 1)[1].split("###", 1)[0]
    return {cells[0]: cells for line in block.splitlines() if line.startswith("| ") and "---" not in line
            for cells in [[c.strip() for c in line.strip("|").split("|")]] if cells[0] != "pack"}


def _html_rows(text: str, candidate_index: int) -> dict[str, list[str]]:
    section = text.split(f'id="cand-{candidate_index}"', 1)[1].split("</section>", 1)[0]
    rows = {}
    for attrs, body in re.findall(r'<tr class="pack-row" ([^>]*)>(.*?)</tr>', section, re.S):
        cells = [" ".join(unescape(re.sub(r"<[^>]+>", " ", c)).split())
                 for c in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)]
        rows[cells[0]] = cells + [dict(re.findall(r'data-([a-z]+)="([^"]*)"', attrs))]
    return rows


def _assert_same_numbers(report: "api.CompareReport", texts: dict[str, str]) -> None:
    expected = _expected(report)
    data = json.loads(texts["--json"])
    junit = ET.fromstring(texts["--junit"])
    for (cand, pack), e in expected.items():
        t = _as_text(e)
        # JSON and JUnit: the numbers themselves
        jp = next(p for c in data["comparisons"] if c["candidate"] == cand for p in c["packs"] if p["pack"] == pack)
        assert (jp["items"], jp["harmful_items"], jp["identical_outputs"]) == (e["items"], e["harmful"], e["identical"])
        assert jp["baseline_accuracy"] == pytest.approx(e["baseline"]) and jp["delta_points"] == pytest.approx(e["delta"])
        assert jp["candidate_accuracy"] == pytest.approx(e["candidate"])
        assert jp["delta_ci_points"] == pytest.approx([e["low"], e["high"]])
        assert jp["first_divergent_token"] == e["first"]
        suite = next(s for s in junit.findall("testsuite") if s.get("name") == f"evalrun.{cand}")
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        for key, name in (("items", "items"), ("harmful", "harmful_items"), ("identical", "identical_outputs"),
                          ("baseline", "baseline_accuracy"), ("candidate", "candidate_accuracy"),
                          ("delta", "delta_points"), ("low", "delta_ci_low_points"), ("high", "delta_ci_high_points")):
            assert float(props[f"{pack}.{name}"]) == pytest.approx(e[key]), (cand, pack, name)
        assert jp["recovery"] == pytest.approx(e["recovery"])
        # terminal: pack, items, baseline, candidate, delta, CI, recovery, p, MDE, harmful, helpful, errors, identical
        row = _terminal_rows(texts["terminal"], cand)[pack]
        assert [row[i] for i in (1, 2, 3, 4, 5, 6, 9, 12, 13)] == [
            t[k] for k in ("items", "baseline", "candidate", "delta", "ci", "recovery", "harmful", "identical",
                           "first")], cand
        # Markdown: pack, items, baseline, candidate, delta (CI), recovery, p, harmful, identical, verdict
        row = _markdown_rows(texts["--markdown"], cand)[pack]
        assert [row[1], row[2], row[3], row[4], row[5], row[7], row[8], row[9]] == [
            t["items"], t["baseline"], t["candidate"], f"{t['delta']} {t['ci']}", t["recovery"], t["harmful"],
            t["identical"], t["first"]]
        # HTML: pack, items, baseline, candidate, delta, CI, recovery [interval], p, MDE, harmful (items), helpful,
        # errors, identical
        index = [c.candidate for c in report.comparisons].index(cand) + 1
        row = _html_rows(texts["--html"], index)[pack]
        assert [row[1], row[2], row[3], row[4], row[5], row[12], row[13]] == [
            t[k] for k in ("items", "baseline", "candidate", "delta", "ci", "identical", "first")]
        assert row[6].split(" [")[0] == t["recovery"]
        assert row[9].endswith(f"({t['harmful']} items)")
        assert row[-1] == {"pack": pack, "items": t["items"], "harmful": t["harmful"], "identical": str(e["identical"])}
    # the noise floor's harmful count, the same in each
    nf = sum(pc.harmful_items for pc in report.noise_floor.comparison.packs)
    sentence = f"(a repeat of the baseline) has {nf} harmful flip(s)"
    for key in ("terminal", "--markdown", "--html"):
        assert sentence in " ".join(unescape(texts[key]).split()), key
    assert data["noise_floor"]["harmful_items"] == nf
    assert {s.find("properties/property[@name='noise_floor.harmful_items']").get("value")
            for s in junit.findall("testsuite")} == {str(nf)}


@pytest.mark.parametrize("damage", ["empty", "all_missing_one_pack"])
def test_nothing_paired_is_incomplete_never_pass(tmp_path: Path, damage: str) -> None:
    base = make_run("baseline", ITEMS, set())
    cand = make_run("int2kv", ITEMS, {"docs"} | {(it.meta.get("target_tokens"), it.meta.get("depth"), i)
                                                    for it in ITEMS for i in range(3)})
    if damage == "empty":
        base = replace(base, generations={})
    else:
        base = _drop(base, [it.id for it in ITEMS if it.pack == "needle"])
        cand = replace(cand, generations={k: v for k, v in cand.generations.items() if not k.startswith("docs/")} |
                       {k: base.generations[k] for k in base.generations if k.startswith("docs/")})
    report = api.compare_results(base, [(cand, None)])
    [verdict] = report.verdicts
    assert verdict.status == "incomplete" and report.exit_code == 4
    [gap] = verdict.pack_gaps("needle")
    assert "0 of 12 items paired" in gap.reason and "/runs/baseline" in gap.reason
    texts = _render_all(report, tmp_path)
    assert set(_statuses(texts, "int2kv").values()) == {"INCOMPLETE"}


def test_status_order_and_unevaluated_rules() -> None:
    assert worst([]) == "incomplete"
    assert worst(["pass", "incomplete"]) == "incomplete"
    assert worst(["incomplete", "fail", "pass"]) == "fail"
    rule = RuleResult("c", "p", "non_inferiority", float("nan"), -1.0, False, "", evaluated=False)
    v = Verdict("c", [rule], [])
    assert v.status == "incomplete" and not v.passed and v.failed == [] and v.exit_code == 4
    assert Verdict("c", [], [], [Gap("*", "x")]).status == "incomplete"
    assert STATUS_TEXT[v.pack_status("p")] == "INCOMPLETE"
