"""Speed rules in the gate, on known timings: a slower candidate fails `min_speedup` with the measured
interval in the message; `max_regression` and `min_goodput` stand on bounds, not point estimates; a
rule that cannot be measured honestly is incomplete; names the gate cannot match are exit 2."""

from __future__ import annotations

import pytest

from evalrun.contract.types import Item, ItemMeta
from evalrun.evals import api
from evalrun.evals.files import ConfigError
from evalrun.evals.gate import load_gate, requests_needed, share_lower_bound
from evalrun.evals.results import RunResult
from evalrun.evals.timing import SLO, speedup
from tests.fakes.runs import answered, run_result


def _run(name: str, scale: float, n: int = 12, emulated: list[str] | None = None, jitter: float = 0.05) -> RunResult:
    items, gens = [], {}
    for i in range(n):
        it = Item(id=f"latency/s-{i}", pack="latency", prompt=f"p{i}", fields=[], meta=ItemMeta(shape="short"))
        items.append(it)
        k = 1 + jitter * ((i * 7) % 5 - 2)  # the same per-item spread on both sides
        gens[it.id] = answered(it, new_tokens=11, seconds=scale * k * 1.1, prefill_seconds=0.1 * scale * k,
                               decode_seconds=scale * k, started_at=float(i * 10), prompt_tokens=50,
                               itl_seconds=[0.1 * scale * k] * 10)
    return run_result(name, items, gens, key=f"key-{name}", device="cpu", dtype="float32", emulated=emulated or [])


def _verdict(cand: RunResult, gate: dict, slo: SLO | None = None):  # type: ignore[no-untyped-def]
    report = api.compare_results(_run("base", 1.0), [(cand, load_gate(gate))], slo=slo)
    return report.verdicts[0]


def test_a_slower_candidate_fails_min_speedup_with_the_interval() -> None:
    v = _verdict(_run("slow", 1.25), {"speed": [{"min_speedup": {"metric": "tpot_p50", "value": 1.3}}]})
    [rule] = [r for r in v.rules if r.rule.startswith("min_speedup")]
    assert rule.status == "fail" and v.status == "fail" and v.exit_code == 1
    assert rule.measured == pytest.approx(0.8, abs=0.01)
    assert "0.80x [" in rule.detail and "over 12 paired requests" in rule.detail and "below 1.30x" in rule.detail


def test_a_faster_candidate_passes_only_when_the_interval_supports_it() -> None:
    fast = _verdict(_run("fast", 0.5), {"speed": [{"min_speedup": {"metric": "tpot_p50", "value": 1.3}}]})
    assert [r.status for r in fast.rules if r.rule.startswith("min_")] == ["pass"]
    # 1.33x measured, but a point estimate above 1.3 is not enough when the interval reaches below it
    base, noisy = _run("base", 1.0), _run("noisy", 0.75)
    for i, g in enumerate(noisy.generations.values()):  # candidate-side noise the baseline does not share
        g.decode_seconds *= 1 + 0.4 * ((i * 5) % 3 - 1)
    sp = speedup(base.generations, noisy.generations, "tpot_p50")
    assert sp is not None and sp.value > 1.3 > sp.low
    v = api.compare_results(base, [(noisy, load_gate({"speed": [
        {"min_speedup": {"metric": "tpot_p50", "value": 1.3, "shape": "short"}}]}))]).verdicts[0]
    [rule] = [r for r in v.rules if r.rule.startswith("min_")]
    assert rule.rule == "min_speedup[tpot_p50, shape short]" and rule.status == "fail"


def test_max_regression_allows_a_bounded_slowdown() -> None:
    gate = {"speed": [{"max_regression": {"metric": "ttft_p99", "value": 0.10}}]}
    assert [r.status for r in _verdict(_run("same", 1.0), gate).rules if r.rule.startswith("max_reg")] == ["pass"]
    assert [r.status for r in _verdict(_run("worse", 1.2), gate).rules if r.rule.startswith("max_reg")] == ["fail"]


def test_min_goodput_stands_on_the_lower_bound_and_says_when_too_few_requests() -> None:
    slo = SLO(tpot=0.12)
    gate = {"speed": [{"min_goodput": {"value": 0.8}}]}
    # every request meets the SLO: 12 of 12, lower bound 0.05**(1/12) = 0.779 < 0.8: too small to vouch for
    v = _verdict(_run("ok", 1.0), gate, slo)
    [rule] = [r for r in v.rules if r.rule == "min_goodput"]
    assert rule.status == "incomplete" and rule.items_needed == requests_needed(0.8, 0.95) == 14
    assert v.exit_code == 4
    # the same with 20 requests passes; a slow candidate (no request within the SLO) fails
    big = api.compare_results(_run("base", 1.0, n=20), [(_run("ok", 1.0, n=20), load_gate(gate))], slo=slo)
    assert [r.status for r in big.verdicts[0].rules if r.rule == "min_goodput"] == ["pass"]
    slow = api.compare_results(_run("base", 1.0, n=20), [(_run("slow", 2.0, n=20), load_gate(gate))], slo=slo)
    assert [r.status for r in slow.verdicts[0].rules if r.rule == "min_goodput"] == ["fail"]
    assert share_lower_bound(12, 12, 0.95) == pytest.approx(0.05 ** (1 / 12))


def test_min_goodput_without_an_slo_is_not_evaluated() -> None:
    v = _verdict(_run("ok", 1.0), {"speed": [{"min_goodput": {"value": 0.5}}]})
    [rule] = [r for r in v.rules if r.rule == "min_goodput"]
    assert rule.status == "incomplete" and "no SLO" in rule.detail and v.exit_code == 4


def test_an_emulated_method_cannot_pass_a_speed_rule() -> None:
    v = _verdict(_run("emul", 0.5, emulated=["activation_sparsity"]),
                 {"speed": [{"min_speedup": {"metric": "e2el_p50", "value": 1.1}}]})
    [rule] = [r for r in v.rules if r.rule.startswith("min_")]
    assert rule.status == "incomplete" and "emulated" in rule.detail and v.status != "pass"


@pytest.mark.parametrize("rule, key", [
    ({"min_speedup": {"metric": "tpot_mean", "value": 1.3}}, "speed.0.min_speedup.metric"),
    ({"min_speedup": {"metric": "tpot_p50", "value": -1}}, "speed.0.min_speedup.value"),
    ({"min_speedup": {"metric": "tpot_p50", "value": 1.3}, "min_goodput": {"value": 0.9}}, "speed.0"),
    ({"min_goodput": {"value": 0.9, "slo": {"ttft": "soon"}}}, "speed.0.min_goodput.slo"),
])
def test_bad_speed_rules_name_the_key(rule: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_gate({"speed": [rule]}, "gate.yaml")
    assert "gate.yaml" in str(err.value) and key.split(".")[-1] in str(err.value)


def test_a_speed_rule_naming_an_unknown_shape_or_pack_is_exit_2() -> None:
    base, cand = _run("base", 1.0), _run("fast", 0.5)
    for rule, key in (({"min_speedup": {"metric": "tpot_p50", "value": 1.1, "shape": "shrt"}}, "shape"),
                      ({"min_speedup": {"metric": "tpot_p50", "value": 1.1, "pack": "latncy"}}, "pack")):
        gate = load_gate({"speed": [rule]}, "g.yaml")
        with pytest.raises(ConfigError) as err:
            api.check_gates([gate], base.items + cand.items)
        assert f"speed[0].min_speedup.{key}" in str(err.value) and "did you mean" in str(err.value)
