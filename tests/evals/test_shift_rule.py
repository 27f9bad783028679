"""`shift`: the sign test over a pack's length (or depth) buckets, on comparisons paired from scored items.
A small loss in every bucket fails it where the pack's tolerance and each bucket's own test pass; an A/A
candidate passes; too few buckets is not testable (never a pass); a pack without buckets is exit 2."""

from __future__ import annotations

import pytest

from evalrun.contract.errors import ConfigError
from evalrun.contract.types import Field, Item, ItemMeta
from evalrun.evals.compare import pair
from evalrun.evals.gate import GateConfig, check_gate, evaluate, load_gate
from evalrun.evals.scoring import ScoredItem
from tests.conftest import needle_items
from tests.fakes.runs import scored

LENGTHS = (256, 512, 1024, 2048, 4096, 8192)
PER_BUCKET = 25


def _run(wrong: dict[int, set[int]], lengths: tuple[int, ...] = LENGTHS) -> list[ScoredItem]:
    """PER_BUCKET items per length, one free-text field each; item i of bucket L is read wrong where wrong[L] holds i."""
    return [scored(f"needle/L{length}-{i}", {"value": "wrong_value" if i in wrong.get(length, set()) else "correct"},
                   kinds="text", prompt_hash=f"h{length}-{i}", meta=ItemMeta(target_tokens=length, depth=0.5))
            for length in lengths for i in range(PER_BUCKET)]


def _gate(**rule: object) -> GateConfig:
    return load_gate({"packs": {"needle": {"max_drop": 5.0, "shift": {"by": "length"}, **rule}}})


def _rule(verdict, name: str):
    return next(r for r in verdict.rules if r.rule == name)


def test_a_small_drop_in_every_bucket_fails_shift_alone() -> None:
    base, cand = _run({}), _run({length: {3} for length in LENGTHS})  # 1 of 25 lost per bucket: 4 points
    verdict = evaluate(pair(base, cand, "b", "c"), _gate())
    shift, drop = _rule(verdict, "shift"), _rule(verdict, "max_drop")
    assert drop.status == "pass" and drop.measured == pytest.approx(4.0)  # within the pack's 5-point tolerance
    assert shift.status == "fail" and verdict.status == "fail"
    assert (shift.measured, shift.threshold) == (6.0, 5.0)  # 5 of 6 lower would still pass (p = 7/64)
    assert "p = 0.0156" in shift.detail and "<=256 -4.0" in shift.detail and "<=8k -4.0" in shift.detail
    for length in LENGTHS:  # each bucket alone: its own gate passes and its McNemar says nothing
        alone = [s for s in base if s.meta.target_tokens == length], [s for s in cand if s.meta.target_tokens == length]
        paired = pair(*alone, "b", "c")
        assert evaluate(paired, load_gate({"packs": {"needle": {"max_drop": 5.0}}})).status == "pass"
        assert paired.packs[0].stats.paired.p_value == pytest.approx(0.5)  # McNemar mid-p of 1 lost, 0 gained


def test_an_a_a_candidate_passes() -> None:
    base = _run({length: {0} for length in LENGTHS})
    same = evaluate(pair(base, _run({length: {0} for length in LENGTHS}), "b", "c"), _gate())
    assert _rule(same, "shift").status == "pass" and "0 of the 0 that moved" in _rule(same, "shift").detail
    # noise both ways: three buckets lose an item, three gain the one the baseline missed
    noisy = _run({length: ({0, 1} if k % 2 == 0 else set()) for k, length in enumerate(LENGTHS)})
    verdict = evaluate(pair(base, noisy, "b", "c"), _gate(max_drop=None))
    shift = _rule(verdict, "shift")
    assert shift.status == "pass" and shift.measured == 3.0 and "p = 0.656" in shift.detail


def test_too_few_buckets_is_not_testable_never_a_pass() -> None:
    lengths = LENGTHS[:4]  # even all four lower gives p = 1/16
    verdict = evaluate(pair(_run({}, lengths), _run({L: {3} for L in lengths}, lengths), "b", "c"),
                       _gate(max_drop=None))
    shift = _rule(verdict, "shift")
    assert shift.status == "untestable" and "p = 0.0625" in shift.cannot_fail
    assert verdict.status == "incomplete" and any("shift: not testable here" in g.reason for g in verdict.gaps)


def test_by_depth_uses_the_depth_buckets() -> None:
    depths = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    runs = [[scored(f"needle/D{d}-{i}", {"value": "wrong_value" if lose and i == 2 else "correct"}, kinds="text",
                    prompt_hash=f"h{d}-{i}", meta=ItemMeta(target_tokens=512, depth=d))
             for d in depths for i in range(10)] for lose in (False, True)]
    gate = load_gate({"packs": {"needle": {"max_drop": None, "shift": {"by": "depth"}}}})
    shift = _rule(evaluate(pair(*runs, "b", "c"), gate), "shift")
    assert shift.status == "fail" and "0.00 -10.0" in shift.detail and "1.00 -10.0" in shift.detail
    length = load_gate({"packs": {"needle": {"max_drop": None, "shift": {"by": "length"}}}})
    assert _rule(evaluate(pair(*runs, "b", "c"), length), "shift").status == "untestable"  # one length bucket


def _plain(pack: str) -> list[Item]:
    return [Item(id=f"{pack}/{i}", pack=pack, prompt="What is it?", fields=[Field(name="value", kind="text", gold="1")])
            for i in range(3)]


def test_shift_on_a_pack_without_buckets_is_a_config_error() -> None:
    items = [*needle_items(), *_plain("plain")]
    packs, names = {"needle", "plain"}, {"value"}
    check_gate(_gate(), packs, names, items=items)  # needle items carry lengths
    with pytest.raises(ConfigError, match=r"gate\.packs\.plain\.shift\.by: pack\(s\) plain have no length buckets"):
        check_gate(load_gate({"packs": {"plain": {"shift": {"by": "length"}}}}), packs, names, items=items)
    with pytest.raises(ConfigError, match="plain have no depth buckets.*own entry without shift"):
        check_gate(load_gate({"packs": {"*": {"shift": {"by": "depth"}}}}), packs, names, items=items)
    check_gate(load_gate({"packs": {"*": {"shift": {"by": "depth"}}, "plain": {"max_drop": 0}}}), packs, names,
               items=items)  # its own entry: '*' no longer applies to it
    with pytest.raises(ConfigError, match=r"gate\.packs\.needle\.shift: shift compares item accuracy"):
        check_gate(load_gate({"metric": "micro_f1", "packs": {"needle": {"shift": {"by": "length"}}}}), packs, names,
                   items=items)
    with pytest.raises(ConfigError, match="by"):
        load_gate({"packs": {"needle": {"shift": {"by": "width"}}}})
