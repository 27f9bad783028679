"""Recovery (candidate accuracy / baseline accuracy, the unit vLLM's and model cards' tables use) beside
every delta, the `min_recovery` rule decided on its interval, and `min_acceptance` on a speculative
candidate's measured acceptance rate."""

from __future__ import annotations

import numpy as np
import pytest

from evalrun.contract.manifest import AccelEffects
from evalrun.evals.files import ConfigError
from evalrun.evals.gate import GateConfig, acceptance_rule, check_acceptance, evaluate, load_gate
from evalrun.evals.stats import bootstrap_recovery, recovery
from tests.evals.test_gate import _rule, _runs


def test_recovery_is_the_accuracy_ratio_with_a_paired_interval() -> None:
    assert recovery(0.8, 0.6) == pytest.approx(0.75) and recovery(0.0, 0.5) is None
    comp = _runs(50, 5)
    [pc] = comp.packs
    assert pc.recovery == pytest.approx(45 / 50)
    iv = pc.stats.recovery
    assert iv.delta == pytest.approx(0.9) and iv.low < 0.9 < iv.high + 1e-9 and iv.high <= 1.0
    same = bootstrap_recovery(np.ones(40), np.ones(40))
    assert (same.low, same.high) == (1.0, 1.0)
    assert bootstrap_recovery(np.zeros(5), np.ones(5)) is None


def test_min_recovery_is_decided_on_the_lower_bound() -> None:
    gate = GateConfig.model_validate({"packs": {"*": {"max_drop": None, "min_recovery": 80}},
                                      "max_harmful_flips": {k: None for k in ("amount", "number", "date", "id")}})
    ok = _rule(evaluate(_runs(50, 1), gate), "min_recovery")  # 98% recovered, bound well above 80
    assert ok.status == "pass" and ok.comparator == ">=" and "recovery 98.0% [" in ok.detail
    bad = _rule(evaluate(_runs(50, 10), gate), "min_recovery")  # 80% recovered: the lower bound is below 80
    assert bad.status == "fail" and bad.measured < 80
    strict = GateConfig.model_validate({"packs": {"*": {"min_recovery": 99}}})
    assert _rule(evaluate(_runs(50, 0), strict), "min_recovery").status == "pass"  # 100% [100, 100]


def test_min_recovery_on_a_baseline_that_scored_nothing_is_not_testable() -> None:
    from tests.evals.test_gate import _item
    from evalrun.evals.compare import pair

    base = [_item(i, {"total": ("amount", "wrong_value", None)}) for i in range(5)]
    gate = GateConfig.model_validate({"packs": {"*": {"min_recovery": 90}}})
    rule = _rule(evaluate(pair(base, base, "b", "c"), gate), "min_recovery")
    assert rule.status == "untestable"


def test_min_acceptance_on_the_recorded_rate() -> None:
    gate = load_gate({"min_acceptance": 0.5}, "g.yaml")
    # beside the default min_tokens_per_step floor (tests/evals/test_acceptance_floor.py)
    [ok, _] = acceptance_rule(gate, "spec", {"speculative": AccelEffects(acceptance_rate=0.72)})
    assert ok.status == "pass" and ok.measured == 0.72 and ok.comparator == ">="
    [low, _] = acceptance_rule(gate, "spec", {"speculative": AccelEffects(acceptance_rate=0.05)})
    assert low.status == "fail"
    [none, _] = acceptance_rule(gate, "spec", {"speculative": AccelEffects(acceptance_rate=None)})
    assert none.status == "incomplete" and "none recorded" in none.detail
    assert acceptance_rule(GateConfig(), "spec", {}) == []


def test_min_acceptance_on_a_candidate_without_speculative_decoding_names_the_key() -> None:
    gate = load_gate({"min_acceptance": 0.5}, "gate.yaml", "")
    check_acceptance(gate, "spec", {"speculative": {"method": "prompt_lookup"}})
    with pytest.raises(ConfigError) as err:
        check_acceptance(gate, "int4kv", {"kv_cache": {"quant": "int4"}})
    assert str(err.value).startswith("gate.yaml: min_acceptance: min_acceptance needs a candidate with speculative")
    assert "'int4kv' has kv_cache" in str(err.value)
    assert load_gate({"min_acceptance": 0.4}, "g.yaml").has_rule()


@pytest.mark.slow
def test_compare_refuses_min_acceptance_without_speculative_before_generating(tiny_model_dir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from evalrun.evals import api
    from evalrun.evals.config import parse_config
    from tests.conftest import tiny_config

    base = parse_config(tiny_config(tiny_model_dir, name="base"))
    cand = parse_config(tiny_config(tiny_model_dir, name="cand", gate={"min_acceptance": 0.5}))
    with pytest.raises(ConfigError) as err:
        api.compare(base, [cand], out=tmp_path, log=lambda m: None)
    assert err.value.path == "gate.min_acceptance"
    assert not any(tmp_path.iterdir()), "nothing was generated"
