"""Gate rules, each tested passing, failing and (where the baseline got none of it right) untestable,
and the CI artefacts read back."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalrun.evals import api
from evalrun.evals.files import ConfigError
from evalrun.evals.gate import (
    DEFAULT_MAX_HARMFUL, GateConfig, NOTHING_COULD_FAIL, PackRule, RuleResult, Verdict, evaluate, load_gate,
    load_gate_file, overall_exit_code, untestable_gaps, worst,
)
from evalrun.evals.compare import pair
from evalrun.evals.scoring import ScoredItem
from evalrun.contract.types import FieldScore
from evalrun.reports.formats import render_junit, render_markdown
from evalrun.reports.text import rule_text
from tests.conftest import DEPTHS, LENGTHS, doc_items, make_run, needle_items
from tests.fakes.runs import scored


NO_FLIP_RULES: dict[str, int | None] = {k: None for k in DEFAULT_MAX_HARMFUL}


def _item(i: int, fields: dict[str, tuple[str, str, str | None]], output: str = "x") -> ScoredItem:
    """fields: name -> (kind, outcome, subcode)"""
    return scored(f"p/{i}", {n: FieldScore(outcome=o, subcode=s) for n, (_, o, s) in fields.items()},
                  kinds={n: k for n, (k, _, _) in fields.items()}, output=output, prompt_hash=f"h{i}")


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
    verdicts[1] = dataclasses.replace(verdicts[1], candidate='bad"<&>')
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
    assert table_rows and all(line.count("|") == 7 for line in table_rows), "model text must not add table cells"


# --------------------------------------------------------------------------- rules that cannot fail
# Real scored runs (tests/conftest.py): 12 needle items asking for one number each, and a document
# pack (an amount, a text and an absent number). A harmful flip needs a baseline hit and a drop needs a
# baseline above 0: where the baseline got none of a rule's scope right, the rule is "untestable".

ALL_NEEDLES = {(length, depth, i) for length in LENGTHS for depth in DEPTHS for i in range(2)}
ONE_RIGHT = ALL_NEEDLES - {(512, 0.0, 0)}  # the baseline finds one needle of 12


def _verdict(base_wrong: set, cand_wrong: set, gate: GateConfig | None = None, docs: bool = False):
    items = needle_items() + (doc_items() if docs else [])
    base, cand = make_run("baseline", items, base_wrong), make_run("int4kv", items, cand_wrong)
    return api.compare_results(base, [(cand, gate)]).verdicts[0]


RULE_KINDS = {
    "max_drop": ("max_drop", GateConfig(packs={"*": PackRule(max_drop=0)}, max_harmful_flips=NO_FLIP_RULES)),
    "max_drop_micro_f1": ("max_drop", GateConfig(metric="micro_f1", packs={"*": PackRule(max_drop=0)},
                                                 max_harmful_flips=NO_FLIP_RULES)),
    "non_inferiority": ("non_inferiority", GateConfig(packs={"*": PackRule(max_drop=None, non_inferiority=5)},
                                                      max_harmful_flips=NO_FLIP_RULES)),
    "flips_by_type": ("max_harmful_flips[number]", GateConfig(packs={"*": PackRule(max_drop=None)})),
    "flips_by_field": ("max_harmful_flips[value]", GateConfig(packs={"*": PackRule(max_drop=None)},
                                                              max_harmful_flips={"value": 0})),
}


@pytest.mark.parametrize("kind", sorted(RULE_KINDS))
def test_a_rule_the_baseline_never_got_right_is_untestable_not_a_pass(kind: str) -> None:
    name, gate = RULE_KINDS[kind]
    v = _verdict(ALL_NEEDLES, ALL_NEEDLES, gate)  # baseline 0 of 12: nothing the candidate could lose
    [r] = v.rules
    assert r.rule == name and r.status == "untestable" and r.evaluated
    assert r.untestable_reason == "not testable here (baseline 0 of 12)"
    assert r.threshold == (-5.0 if name == "non_inferiority" else 0.0) and r.measured == 0.0, "values are kept"
    assert rule_text(r).startswith(f"{name}: not testable here (baseline 0 of 12), measured 0, threshold")
    # the pack's only rule could not fail: a gap, so the verdict is incomplete (exit 4), never a pass
    assert v.status == "incomplete" and not v.passed and v.exit_code == 4 and v.failed == []
    assert [(g.pack, g.reason) for g in v.gaps] == [("needle", NOTHING_COULD_FAIL)]
    assert v.pack_status("needle") == "incomplete"
    assert v.summary() == "0 of 1 rules passed, 1 not testable here, 1 gap(s) in the data"


@pytest.mark.parametrize("kind", sorted(RULE_KINDS))
def test_a_rule_the_baseline_got_right_once_is_testable(kind: str) -> None:
    name, gate = RULE_KINDS[kind]
    kept = _verdict(ONE_RIGHT, ONE_RIGHT, gate)  # baseline 1 of 12, the candidate keeps it
    [r] = kept.rules
    assert r.rule == name and r.status == "pass" and (r.baseline_right, r.in_scope) == (1, 12)
    assert kept.status == "pass" and kept.exit_code == 0 and kept.gaps == []
    assert kept.summary() == "1 of 1 rules passed"
    lost = _verdict(ONE_RIGHT, ALL_NEEDLES, gate)  # ... and loses it
    [r] = lost.rules
    assert r.status == "fail" and lost.exit_code == 1
    assert lost.summary() == "0 of 1 rules passed, 1 failed"


def test_min_items_and_errors_rules_are_always_testable() -> None:
    gate = GateConfig(packs={"*": PackRule(max_drop=0, min_items=5)}, max_harmful_flips=NO_FLIP_RULES)
    v = _verdict(ALL_NEEDLES, ALL_NEEDLES, gate)
    assert {r.rule: r.status for r in v.rules} == {"max_drop": "untestable", "min_items": "pass"}
    # one rule here could fail (and did not): the pack passes, and the counts say what was not testable
    assert v.status == "pass" and v.exit_code == 0 and v.gaps == []
    assert v.summary() == "1 of 2 rules passed, 1 not testable here"
    short = _verdict(ALL_NEEDLES, ALL_NEEDLES, GateConfig(packs={"*": PackRule(max_drop=0, min_items=13)},
                                                          max_harmful_flips=NO_FLIP_RULES))
    assert short.status == "fail" and short.summary() == "0 of 2 rules passed, 1 failed, 1 not testable here"
    # a speed-only pack (no fields): nothing scored, and the errors rule can still fail
    speed = [_item(i, {}) for i in range(4)]
    [errors] = evaluate(pair(speed, speed, "base", "cand", n_resamples=100)).rules
    assert errors.rule == "errors" and errors.baseline_right is None and errors.status == "pass"


def test_a_pack_with_testable_and_untestable_rules_passes_and_counts_both() -> None:
    # docs: the baseline misses the amount (0 of 1) but gets the item accuracy (2 of 3) and the absent number
    v = _verdict(ONE_RIGHT | {"docs"}, ONE_RIGHT | {"docs"}, docs=True)
    by = {(r.pack, r.rule): r for r in v.rules}
    assert by[("docs", "max_harmful_flips[amount]")].untestable_reason == "not testable here (baseline 0 of 1)"
    assert by[("docs", "max_harmful_flips[amount]")].status == "untestable"
    assert [r.status for k, r in by.items() if k != ("docs", "max_harmful_flips[amount]")] == ["pass"] * 4
    assert v.status == "pass" and v.exit_code == 0 and v.pack_status("docs") == "pass"
    assert v.summary() == "4 of 5 rules passed, 1 not testable here"


def test_a_failure_outranks_a_pack_where_nothing_could_fail() -> None:
    # the needles cannot fail (baseline 0 of 12); the document amount is lost
    v = _verdict(ALL_NEEDLES, ALL_NEEDLES | {"docs"}, docs=True)
    assert v.pack_status("needle") == "incomplete" and v.pack_status("docs") == "fail"
    assert v.status == "fail" and v.exit_code == 1
    assert [g.reason for g in v.gaps] == [NOTHING_COULD_FAIL]
    assert v.summary() == "1 of 5 rules passed, 2 failed, 2 not testable here, 1 gap(s) in the data"
    assert overall_exit_code([v, _verdict(ALL_NEEDLES, ALL_NEEDLES)]) == 1


def test_a_type_rule_whose_every_field_has_its_own_limit_is_not_listed() -> None:
    gate = GateConfig(max_harmful_flips={"value": 0})  # the needle's only number field has its own limit
    v = _verdict(ONE_RIGHT, ONE_RIGHT, gate, docs=True)
    rules = {(r.pack, r.rule) for r in v.rules}
    assert ("needle", "max_harmful_flips[value]") in rules and ("needle", "max_harmful_flips[number]") not in rules
    assert ("docs", "max_harmful_flips[number]") in rules, "the document's own number field keeps the type's rule"


def test_a_verdict_where_nothing_could_fail_is_exit_4_even_with_many_packs() -> None:
    rules = [RuleResult("c", pack, "max_drop", 0.0, 0.0, True, baseline_right=0, in_scope=3) for pack in ("a", "b")]
    assert worst(r.status for r in rules) == "incomplete", "only untestable rules are never a pass"
    v = Verdict("c", rules, [], untestable_gaps(rules))
    assert v.status == "incomplete" and v.exit_code == 4 and len(v.gaps) == 2


def test_one_field_name_with_two_types_is_judged_per_type() -> None:
    """A needle's `value` is a number in some items and an amount in others: each type's rule
    sees its own items (a number flip is no amount flip, and both are testable)."""
    kinds = ["number", "amount"] * 4
    base = [_item(i, {"value": (k, "correct", None)}) for i, k in enumerate(kinds)]
    cand = [_item(i, {"value": (k, "missing" if i < 2 else "correct", None)}) for i, k in enumerate(kinds)]
    v = evaluate(pair(base, cand, "base", "cand", n_resamples=200))
    number, amount = _rule(v, "max_harmful_flips[number]"), _rule(v, "max_harmful_flips[amount]")
    assert (number.measured, number.status, number.in_scope) == (1.0, "fail", 4)
    assert (amount.measured, amount.status, amount.in_scope) == (1.0, "fail", 4)
    untested = [_item(i, {"value": (k, "correct" if k == "amount" else "wrong_value", None)}) for i, k in enumerate(kinds)]
    v = evaluate(pair(untested, untested, "base", "cand", n_resamples=200))
    assert _rule(v, "max_harmful_flips[number]").status == "untestable"
    assert _rule(v, "max_harmful_flips[amount]").status == "pass"


def test_rates_in_a_rules_text_are_plain_percentages() -> None:
    """A 1-of-1 flip rate once printed as "1e+02%"."""
    from evalrun.evals.gate._flip_rules import _pct

    assert [_pct(1, 1), _pct(1, 3), _pct(0, 12), _pct(1, 49), _pct(0, 0)] == \
        ["1/1 (100%)", "1/3 (33.3%)", "0/12 (0%)", "1/49 (2.04%)", "0/0"]


def test_a_scope_with_no_field_right_in_every_replicate_is_described_not_crashed() -> None:
    """Seen with noisy bf16 replicates on one thread: no date field was right in all three
    replicates (n = 0), and wording the Fisher p of nothing raised TypeError (exit 3)."""
    from evalrun.evals.gate._flip_rules import _detail
    from evalrun.evals.stats import FlipTest
    from evalrun.evals.scoring import Stability

    test = FlipTest(limit=0, alpha=0.05, aa_flips=1, aa_trials=1)
    text = _detail("field type", "date", 0, 0, test, Stability(replicates=3), 0, 0, 0, 0, None)
    assert text == "field type date: no field right in all 3 baseline replicates, so no flip to test against A/A"
    assert "Fisher p = " in _detail("field type", "date", 1, 4, test, Stability(replicates=3), 0, 0, 0, 0, None)


def test_a_scope_with_no_a_a_trials_is_described_as_untested_not_as_a_flip() -> None:
    """Seen with 2 noisy bf16 replicates: no amount field right in both, so the scope had no A/A trial
    either, and its rule read "correct at baseline, not in the candidate" for a scope with nothing right."""
    from evalrun.evals.gate._flip_rules import _detail
    from evalrun.evals.stats import FlipTest
    from evalrun.evals.scoring import Stability

    no_trials = FlipTest(limit=0, alpha=0.05, aa_flips=0, aa_trials=0)
    text = _detail("field type", "amount", 0, 0, no_trials, Stability(replicates=2), 0, 0, 0, 0, None)
    assert text == "field type amount: no field right in all 2 baseline replicates, so no flip to test against A/A"
    # one run: no replicates, every flip counts as it always did
    assert _detail("field type", "amount", 1, 3, no_trials, None, 0, 0, 0, 0, None) == \
        "field type amount: correct at baseline, not in the candidate"
