"""The confirmation rule on scored runs: a harmful flip counts only when it reproduces in the
majority of its re-asks. The re-asks here are whole generations of the two runs (the candidate's
flipped answer, or the baseline's right one), so each re-ask is scored like any answer; which one
reproduces is the case under test. The model-backed path (re-asks generated in other batches) is
tests/cli/test_noise_gate.py and tests/cli/test_early_stop.py."""

from __future__ import annotations

import pytest

from evalrun.contract.types import Reask
from evalrun.evals import confirm
from evalrun.evals.gate import GateConfig, evaluate
from evalrun.evals.pairing import Comparison, pair
from evalrun.evals.scoring import score_run
from evalrun.evals.runs import RunResult
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

