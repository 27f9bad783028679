"""Drift rules in the gate (max_kl, min_top1_agreement): decided on the bootstrap interval, never on the
point estimate (pass / fail / inconclusive), fail closed when drift was not measured, and every key the
gate cannot read is a config error naming the file and key."""

from __future__ import annotations

import numpy as np
import pytest

from evalrun.contract.types import Item, ItemMeta
from evalrun.evals import api
from evalrun.evals.files import ConfigError
from evalrun.evals.drift import Drift, TokenDrift
from evalrun.evals.drift.rules import evaluate_drift
from evalrun.evals.gate import check_gate, load_gate
from evalrun.evals.results import RunResult
from evalrun.evals.gate._verdict import EXIT_CODES
from tests.fakes.runs import answered, run_result


def _drift(kls: list[list[float]], top1: list[list[bool]] | None = None, pack: str = "p") -> tuple[Drift, dict[str, str]]:
    per_item = {}
    for i, kl in enumerate(kls):
        same = np.array(top1[i] if top1 else [True] * len(kl))
        per_item[f"{pack}/{i}"] = TokenDrift(np.array(kl, float), same, np.zeros(len(kl)), np.ones(len(kl)))
    return Drift("cand", [], None, per_item=per_item), {k: pack for k in per_item}


def _gate(rules: list[dict], file: str = "gate.yaml"):  # type: ignore[no-untyped-def]
    return load_gate({"drift": rules}, file=file)


def _one(rule: dict, kls: list[list[float]], top1: list[list[bool]] | None = None):  # type: ignore[no-untyped-def]
    drift, packs = _drift(kls, top1)
    (result,) = evaluate_drift(_gate([rule]), "cand", drift, None, packs)
    return result


# item means 0.01 .. 0.02: the whole interval is under 0.05, over 0.005, and straddles 0.015
LOW = [[0.01 + 0.001 * i, 0.01 + 0.001 * i] for i in range(11)]


def test_max_kl_mean_passes_fails_or_is_inconclusive_on_the_interval() -> None:
    ok = _one({"max_kl": {"mean": 0.05}}, LOW)
    assert ok.status == "pass" and ok.rule == "max_kl[mean]" and "the whole interval is within" in ok.detail
    bad = _one({"max_kl": {"mean": 0.005}}, LOW)
    assert bad.status == "fail" and "the whole interval is beyond" in bad.detail
    # the point estimate (0.015) is at the limit; the interval straddles it: neither pass nor fail
    mid = _one({"max_kl": {"mean": 0.0151}}, LOW)
    assert mid.measured < 0.0151 and mid.status == "incomplete" and "inconclusive" in mid.detail
    assert EXIT_CODES[mid.status] == 4


def test_max_kl_p99_is_over_the_tokens() -> None:
    kls = [[0.0] * 99 + [5.0] for _ in range(10)]  # mean 0.05, but 1% of tokens at 5
    assert _one({"max_kl": {"p99": 1.0}}, kls).measured > 0
    assert _one({"max_kl": {"mean": 0.1}}, kls).status == "pass"
    assert _one({"max_kl": {"p99": 10.0}}, kls).status == "pass"
    assert _one({"max_kl": {"p99": 0.001}}, [[1.0] * 100 for _ in range(10)]).status == "fail"


def test_min_top1_agreement_mean_and_p99() -> None:
    kls = [[0.1] * 10 for _ in range(10)]
    top1 = [[True] * 9 + [False] for _ in range(10)]  # every item agrees on 90% of its tokens
    assert _one({"min_top1_agreement": {"mean": 0.85}}, kls, top1).status == "pass"
    low = _one({"min_top1_agreement": {"mean": 0.95}}, kls, top1)
    assert low.status == "fail" and low.comparator == ">="
    assert _one({"min_top1_agreement": {"p99": 0.9}}, kls, top1).status == "pass"
    spread = [[True] * (5 + i % 6) + [False] * (5 - i % 6 + 1) for i in range(12)]
    assert _one({"min_top1_agreement": {"mean": 0.7}}, [[0.1] * len(t) for t in spread], spread).status == "incomplete"


def test_a_scope_with_one_item_cannot_be_bounded() -> None:
    result = _one({"max_kl": {"mean": 0.05}}, [[0.0, 0.0]])
    assert result.status == "incomplete" and "at least 2" in result.detail


def test_a_pack_scope_counts_only_its_items() -> None:
    a, packs_a = _drift([[0.0, 0.0]] * 5, pack="a")
    b, packs_b = _drift([[1.0, 1.0]] * 5, pack="b")
    a.per_item.update(b.per_item)
    gate = _gate([{"max_kl": {"mean": 0.5, "pack": "a"}}, {"max_kl": {"mean": 0.5, "pack": "b"}},
                  {"max_kl": {"mean": 0.5}}])
    results = evaluate_drift(gate, "cand", a, None, packs_a | packs_b)
    assert [(r.pack, r.status) for r in results] == [("a", "pass"), ("b", "fail"), ("*", "incomplete")]


def test_drift_not_measured_fails_closed_naming_the_file_and_key() -> None:
    gate = _gate([{"max_kl": {"mean": 0.05}}, {"min_top1_agreement": {"p99": 0.9}}], file="ci/gate.yaml")
    results = evaluate_drift(gate, "cand", None, "no logprobs stored with the baseline: drift not measured", {})
    assert [r.status for r in results] == ["incomplete", "incomplete"]
    assert results[0].detail.startswith("ci/gate.yaml: gate.drift[0].max_kl: no logprobs stored with the baseline")
    assert results[1].detail.startswith("ci/gate.yaml: gate.drift[1].min_top1_agreement:")


def _speed_only_run(name: str) -> RunResult:
    items = [Item(id=f"latency/{i}", pack="latency", prompt=f"p{i}", fields=[], meta=ItemMeta(shape="short"))
             for i in range(3)]
    return run_result(name, items, [answered(it, new_tokens=2, seconds=0.1) for it in items], key=f"key-{name}")


def test_a_gate_with_drift_rules_and_no_drift_exits_4() -> None:
    """Through compare_results: the gate names a drift rule, nothing was teacher-forced: incomplete."""
    base, cand = _speed_only_run("base"), _speed_only_run("cand")
    plain = api.compare_results(base, [(cand, None)], drift=False)
    assert plain.exit_code == 0  # without the rule, drift is only reported (here: not at all)
    gate = load_gate({"drift": [{"max_kl": {"mean": 0.05}}]}, file="g.yaml")
    report = api.compare_results(base, [(cand, gate)], drift=False)
    rule = next(r for r in report.verdicts[0].rules if r.rule == "max_kl[mean]")
    assert rule.status == "incomplete" and rule.detail.startswith("g.yaml: gate.drift[0].max_kl: drift not measured")
    assert report.exit_code == 4


def test_a_candidate_whose_engine_could_not_read_says_why_in_the_note_and_the_gate() -> None:
    """Teacher forcing found the reason only while reading (a served engine without prompt logprobs):
    the report's note names the candidate and the reason, and a drift rule is incomplete with it."""
    base, cand = _speed_only_run("base"), _speed_only_run("cand")
    gate = load_gate({"drift": [{"max_kl": {"mean": 0.05}}]}, file="g.yaml")
    report = api.compare_results(base, [(cand, gate)], drift_reasons={cand.dir: "the engine returns no prompt logprobs"})
    assert report.drift == {} and report.drift_note == "cand: the engine returns no prompt logprobs: drift not measured"
    rule = next(r for r in report.verdicts[0].rules if r.rule == "max_kl[mean]")
    assert rule.status == "incomplete" and "the engine returns no prompt logprobs" in rule.detail
    assert report.exit_code == 4


@pytest.mark.parametrize(("rule", "key", "says"), [
    ({"max_kl": {"mean": 0.05, "median": 0.1}}, "gate.drift[0].max_kl.median", "unknown key; allowed: mean, p99, pack"),
    ({"max_kl": {"mean": 0.05, "p99": 0.5}}, "gate.drift[0].max_kl", "exactly one of `mean` or `p99`"),
    ({"max_kl": {}}, "gate.drift[0].max_kl", "exactly one of `mean` or `p99`"),
    ({"max_kl": {"mean": -1}}, "gate.drift[0].max_kl.mean", ""),
    ({"min_top1_agreement": {"mean": 1.5}}, "gate.drift[0].min_top1_agreement.mean", ""),
    ({"max_kl": {"mean": 0.1}, "min_top1_agreement": {"mean": 0.9}}, "gate.drift[0]", "exactly one of"),
    ({"max_kll": {"mean": 0.1}}, "gate.drift[0].max_kll", "unknown key"),
])
def test_unreadable_drift_rules_are_config_errors_naming_file_and_key(rule: dict, key: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_gate({"drift": [rule]}, file="cfg/gate.yaml")
    text = str(err.value)
    assert "cfg/gate.yaml" in text and key in text and says in text


def test_an_unknown_pack_in_a_drift_rule_is_a_config_error() -> None:
    gate = load_gate({"drift": [{"max_kl": {"mean": 0.1, "pack": "needle_numbrs"}}]}, file="g.yaml")
    with pytest.raises(ConfigError) as err:
        check_gate(gate, ["needle_numbers"], [])
    assert "g.yaml" in str(err.value) and "gate.drift[0].max_kl.pack" in str(err.value)
    assert "did you mean 'needle_numbers'" in str(err.value)
