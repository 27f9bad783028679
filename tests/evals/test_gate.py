"""Gate rules, each tested passing and failing, and the CI artefacts read back."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalrun.evals.config import ConfigError
from evalrun.evals.gate import DEFAULT_MAX_HARMFUL, GateConfig, PackRule, evaluate, load_gate, load_gate_file
from evalrun.evals.pairing import pair
from evalrun.evals.scoring import ScoredItem
from evalrun.contract.types import FieldScore
from evalrun.reports.junit import render_junit
from evalrun.reports.markdown import render_markdown


NO_FLIP_RULES: dict[str, int | None] = {k: None for k in DEFAULT_MAX_HARMFUL}


def _item(i: int, fields: dict[str, tuple[str, str, str | None]], output: str = "x") -> ScoredItem:
    """fields: name -> (kind, outcome, subcode)"""
    return ScoredItem(
        item_id=f"p/{i}", pack="p", prompt_hash=f"h{i}", output=output,
        fields={n: FieldScore(outcome=o, subcode=s) for n, (_, o, s) in fields.items()},
        kinds={n: k for n, (k, _, _) in fields.items()}, golds={n: "1" for n in fields},
    )


def _runs(n: int, flips: int, field_kind: str = "amount", name: str = "total"):
    base = [_item(i, {name: (field_kind, "correct", None), "note": ("text", "correct", None)}) for i in range(n)]
    cand = [
        _item(i, {name: (field_kind, "wrong_value" if i < flips else "correct", "digit_dropped" if i < flips else None),
                  "note": ("text", "correct", None)}, output="<script>alert(1)</script> | `x`" if i < flips else "x")
        for i in range(n)
    ]
    return pair(base, cand, "base", "cand", n_resamples=500)


def _rule(verdict, name: str):
    return next(r for r in verdict.rules if r.rule == name)


def test_default_gate_fails_one_dropped_amount_and_passes_none() -> None:
    assert evaluate(_runs(50, 0)).passed
    v = evaluate(_runs(50, 1))
    assert not v.passed
    r = _rule(v, "max_harmful_flips[amount]")
    assert (r.measured, r.threshold, r.passed) == (1.0, 0.0, False)
    assert _rule(v, "max_drop").measured == pytest.approx(2.0)
    assert not any(r.rule == "max_harmful_flips[text]" for r in v.rules), "text flips are not gated by default"


def test_max_drop_in_points() -> None:
    gate = GateConfig(packs={"*": PackRule(max_drop=5.0)}, max_harmful_flips=NO_FLIP_RULES)
    assert evaluate(_runs(50, 2), gate).passed  # 4 points
    v = evaluate(_runs(50, 3), gate)  # 6 points
    assert not v.passed and _rule(v, "max_drop").measured == pytest.approx(6.0)


def test_max_drop_on_micro_f1() -> None:
    gate = GateConfig(metric="micro_f1", packs={"p": PackRule(max_drop=1.0)}, max_harmful_flips=NO_FLIP_RULES)
    v = evaluate(_runs(50, 1), gate)
    # 100 gold fields; one wrong value = 1 FP + 1 FN: F1 = 2*99/(2*99+2) = 0.99 -> 1.0 point
    assert _rule(v, "max_drop").measured == pytest.approx(1.0, abs=0.01) and v.passed
    assert not evaluate(_runs(50, 2), gate).passed


def test_non_inferiority_uses_the_interval_lower_bound() -> None:
    gate = GateConfig(packs={"*": PackRule(max_drop=None, non_inferiority=10.0)}, max_harmful_flips=NO_FLIP_RULES)
    ok = evaluate(_runs(200, 2), gate)
    assert ok.passed and _rule(ok, "non_inferiority").measured > -10
    bad = evaluate(_runs(200, 30), gate)
    assert not bad.passed and _rule(bad, "non_inferiority").measured < -10


def test_min_items() -> None:
    gate = GateConfig(packs={"*": PackRule(min_items=40)}, max_harmful_flips=NO_FLIP_RULES)
    assert evaluate(_runs(40, 0), gate).passed
    v = evaluate(_runs(39, 0), gate)
    assert not v.passed and _rule(v, "min_items").measured == 39


def test_max_harmful_flips_by_field_name_and_type() -> None:
    by_name = GateConfig(packs={"*": PackRule(max_drop=None)}, max_harmful_flips={"total": 1})
    assert evaluate(_runs(50, 1), by_name).passed
    assert not evaluate(_runs(50, 2), by_name).passed
    by_type = GateConfig(packs={"*": PackRule(max_drop=None)}, max_harmful_flips={"date": 0, "amount": 2})
    v = evaluate(_runs(50, 2), by_type)
    assert v.passed and not any("date" in r.rule for r in v.rules)


def test_small_pack_gets_a_detectable_difference_note() -> None:
    gate = GateConfig(packs={"*": PackRule(max_drop=2.0)})
    v = evaluate(_runs(20, 0), gate)
    assert any("can only detect" in n for n in v.notes)


def test_bad_gate_config_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"gate.packs.\*.max_dorp: unknown key"):
        load_gate({"packs": {"*": {"max_dorp": 1}}})
    with pytest.raises(ConfigError, match="metric"):
        load_gate({"metric": "bleu"})
    f = tmp_path / "gate.yaml"
    f.write_text("gate:\n  packs: {needle_numbers: {max_drop: 2}}\n")
    assert load_gate_file(f).pack_rule("needle_numbers").max_drop == 2
    f.write_text("max_harmful_flips: {amount: -1}\n")
    with pytest.raises(ConfigError, match=str(f)):
        load_gate_file(f)


def test_junit_is_valid_and_carries_measured_values(tmp_path: Path) -> None:
    c_ok, c_bad = _runs(50, 0), _runs(50, 2)
    verdicts = [evaluate(c_ok), evaluate(c_bad)]
    verdicts[1].candidate = 'bad"<&>'
    path = tmp_path / "j.xml"
    render_junit(verdicts, path)
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert int(root.get("tests")) == sum(len(v.rules) for v in verdicts)
    assert int(root.get("failures")) == len(verdicts[1].failed) > 0
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == int(root.get("tests"))
    failures = root.findall("./testsuite/testcase/failure")
    assert any("measured 2" in f.get("message") for f in failures)
    assert root.findall("./testsuite")[1].get("name") == 'evalrun.bad"<&>'


def test_markdown_escapes_model_text_and_lists_rules() -> None:
    c = _runs(50, 2)
    md = render_markdown([c], [evaluate(c)])
    assert "❌ FAIL" in md and "max_harmful_flips[amount]" in md
    assert "<script>" not in md and "&lt;script&gt;" in md
    table_rows = [line for line in md.splitlines() if line.startswith("| p/")]
    assert table_rows and all(line.count("|") == 6 for line in table_rows), "model text must not add table cells"
