"""The confirmation rule on scored runs: a harmful flip counts only when it reproduces in the
majority of its re-asks. The re-asks here are whole generations of the two runs (the candidate's
flipped answer, or the baseline's right one), so each re-ask is scored like any answer; which one
reproduces is the case under test. The model-backed path (re-asks generated in other batches) is
tests/cli/test_noise_gate.py and tests/cli/test_early_stop.py."""

from __future__ import annotations

import pytest

from evalrun.contract.types import Reask
from evalrun.evals.run import confirm
from evalrun.evals.gate import GateConfig, evaluate
from evalrun.evals.compare import Comparison, pair
from evalrun.evals.scoring import score_run
from evalrun.evals.results import RunResult
from tests.conftest import BASE_WRONG, CAND_WRONG, make_run, needle_items


def _pair() -> tuple[RunResult, RunResult, Comparison]:
    items = needle_items()
    base = make_run("baseline", items, BASE_WRONG)
    cand = make_run("int4kv", items, BASE_WRONG | CAND_WRONG)
    comp = pair(score_run(items, base.generations), score_run(items, cand.generations), "baseline", "int4kv")
    return base, cand, comp


def _reasks(base: RunResult, cand: RunResult, item_id: str, reproduced: int, asked: int) -> list[Reask]:
    """`asked` re-asks of one item, the first `reproduced` of them giving the flipped answer again."""
    return [Reask(attempt=k + 1, batch_size=1 if k == 0 else 4, seed=None if k == 0 else 1000 + k + 1,
                  generation=(cand if k < reproduced else base).generations[item_id]) for k in range(asked)]


@pytest.mark.parametrize(("reproduced", "asked", "counted"), [(0, 3, False), (1, 3, False), (2, 3, True),
                                                              (3, 3, True), (1, 2, False), (2, 2, True)])
def test_a_flip_counts_only_when_the_majority_of_reasks_reproduce_it(reproduced: int, asked: int,
                                                                       counted: bool) -> None:
    base, cand, comp = _pair()
    flipped = sorted({f.item_id for f in comp.harmful})
    assert len(flipped) == len(CAND_WRONG)
    target = flipped[0]
    confirm.apply(comp, {target: _reasks(base, cand, target, reproduced, asked)}, base.items, asked)
    [flip] = [f for f in comp.harmful if f.item_id == target]
    assert flip.confirmations == (reproduced, asked) and flip.confirmed is counted
    assert all(f.confirmations is None for f in comp.harmful if f.item_id != target)  # not re-asked: counted as is
    v = evaluate(comp, GateConfig(confirm=asked))
    assert (flip in v.unconfirmed) is (not counted)
    [rule] = [r for r in v.rules if r.rule == "max_harmful_flips[number]"]
    assert rule.measured == len(flipped) - (0 if counted else 1)


def test_only_the_first_n_reasks_are_read() -> None:
    """A stored run re-asked 3 times and gated with confirm 1 reads the first re-ask (batch 1) only."""
    base, cand, comp = _pair()
    target = sorted({f.item_id for f in comp.harmful})[0]
    reasks = _reasks(base, cand, target, 1, 3)  # reproduced at batch 1, not in the two shuffled batches
    confirm.apply(comp, {target: reasks}, base.items, 1)
    [flip] = [f for f in comp.harmful if f.item_id == target]
    assert flip.confirmations == (1, 1) and flip.confirmed


def test_to_confirm_lists_each_flipped_item_once_in_item_order() -> None:
    _, _, comp = _pair()
    ids = confirm.to_confirm(comp, GateConfig().flip_limits(), None)
    assert ids == list(dict.fromkeys(f.item_id for f in comp.harmful)) and len(ids) == len(CAND_WRONG)
    assert confirm.attempt_plan(1, 4) == (1, None)
    assert confirm.attempt_plan(2, 4) == (4, confirm.RESHUFFLE_SEED + 2)



# -- confirmed flips on a deterministic engine: no noise measured, nothing for a Fisher test to reject ----------

def _exact_runs(lost: set[int], n: int = 6):  # type: ignore[no-untyped-def]
    """A baseline right on n amounts in each of 3 identical replicates (A/A 0 flips), a candidate losing `lost`."""
    from tests.evals.test_stability import _run

    from evalrun.evals.scoring import stability

    base = _run(set(), n)
    stab = stability([base, _run(set(), n), _run(set(), n)])
    comp = pair(base, _run(lost, n), "b", "c")
    return comp, stab


def _confirm_all(comp: Comparison, reproduced: int = 3, asked: int = 3) -> None:
    for f in comp.harmful:
        f.confirmations = (reproduced, asked)


def test_confirmed_flips_beyond_the_limit_fail_without_the_noise_test() -> None:
    comp, stab = _exact_runs({1, 4})
    untested = evaluate(comp, GateConfig(), stab=stab)  # not re-asked: the noise test alone decides
    [rule] = [r for r in untested.rules if r.rule == "max_harmful_flips[amount]"]
    assert rule.status == "pass" and 0.05 < rule.p_value < 0.06  # (1/(K+1))^x territory: no power at 2 flips
    _confirm_all(comp)
    v = evaluate(comp, GateConfig(confirm=3), stab=stab)
    [rule] = [r for r in v.rules if r.rule == "max_harmful_flips[amount]"]
    assert rule.status == "fail" and rule.measured == 2
    assert "2 flip(s) confirmed by re-asking count as losses (beyond the limit: FAIL without the noise test)" in rule.detail
    drop = next(r for r in v.rules if r.rule == "max_drop")
    assert drop.status == "fail" and "2 item(s) lost and confirmed by re-asking" in drop.detail
    assert v.status == "fail"


def test_confirmed_flips_within_the_limit_and_refuted_flips_pass() -> None:
    comp, stab = _exact_runs({1, 4})
    _confirm_all(comp)
    v = evaluate(comp, GateConfig(confirm=3, max_harmful_flips={"amount": 2},
                                  packs={"*": {"max_drop": 50}}), stab=stab)
    assert v.status == "pass", [(r.rule, r.detail) for r in v.rules]
    comp, stab = _exact_runs({1, 4})
    _confirm_all(comp, reproduced=1)  # the re-asks gave the right amount back: batch noise
    v = evaluate(comp, GateConfig(confirm=3), stab=stab)
    assert v.status == "pass" and len(v.unconfirmed) == 2


def test_each_noise_test_states_from_how_many_flips_it_can_reject() -> None:
    from evalrun.evals.stats import FlipTest

    comp, stab = _exact_runs({1, 4})
    v = evaluate(comp, GateConfig(), stab=stab)
    at = FlipTest(0, 0.05, 0, 18).critical(6)
    assert at == 3
    [rule] = [r for r in v.rules if r.rule == "max_harmful_flips[amount]"]
    assert "with A/A 0/18 the test rejects only from 3 flip(s) of 6" in rule.detail
    drop = next(r for r in v.rules if r.rule == "max_drop")
    assert "with A/A 0/18 the test rejects only from 3 flip(s) of 6" in drop.detail
    tiny, stab2 = _exact_runs({0}, n=1)  # 1 of 1 against A/A 0/3: p = 1/4 at most
    [rule] = [r for r in evaluate(tiny, GateConfig(), stab=stab2).rules if r.rule == "max_harmful_flips[amount]"]
    assert "the test rejects no flip count of 1 field(s)" in rule.detail


def test_with_confirm_the_power_is_that_of_counting_confirmed_flips() -> None:
    comp, stab = _exact_runs(set(), n=300)
    plain = evaluate(comp, GateConfig(), stab=stab).power["docs"]
    confirmed = evaluate(comp, GateConfig(confirm=3), stab=stab).power["docs"]
    assert confirmed.rate < plain.rate and "confirmed flips count" in confirmed.sentence
    assert abs(confirmed.rate - (1 - 0.05 ** (1 / 300))) < 1e-6  # 1 - (1 - r)^n >= 0.95, as with no noise at all


def test_apply_records_every_reasked_field_for_the_rate_test() -> None:
    base, cand, comp = _pair()
    target = sorted({f.item_id for f in comp.harmful})[0]
    confirm.apply(comp, {target: _reasks(base, cand, target, 1, 3)}, base.items, 3)
    [pc] = [p for p in comp.packs if target in p.item_ids]
    assert pc.reasked[(target, "value")] == (2, 3)  # the two re-asks that gave the baseline's answer are right
