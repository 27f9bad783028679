"""benchmarks/drift_levers.py's figures: the AUC (ties count one half), the first prefix that detects, the
drift rule against the A/A floor and the flip gate on prefixes (no model: small hand-made data)."""

from __future__ import annotations

import pytest

from benchmarks import drift_levers as dl
from evalrun.evals.gate import GateConfig
from evalrun.evals.scoring import ScoredItem


def test_auc_separates_ranks_and_counts_ties_one_half() -> None:
    assert dl.auc([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0
    assert dl.auc([0.8, 0.9, 0.1, 0.2], [False, False, True, True]) == 0.0
    assert dl.auc([0.5, 0.5], [True, False]) == 0.5  # one tie: half a win
    # positives 0.5 and 0.9, negatives 0.5 and 0.1: pairs (0.5,0.5) tie, the other three are wins
    assert dl.auc([0.5, 0.9, 0.5, 0.1], [True, True, False, False]) == pytest.approx(3.5 / 4)
    assert dl.auc([0.3, 0.3, 0.3], [True, False, False]) == 0.5  # all tied: chance


def test_auc_is_none_with_one_class() -> None:
    assert dl.auc([0.1, 0.2], [False, False]) is None
    assert dl.auc([0.1, 0.2], [True, True]) is None
    assert dl.auc([], []) is None


def test_first_detection_is_the_smallest_prefix_from_two() -> None:
    order = ["a", "b", "c", "d"]
    assert dl.first_detection(order, lambda ids: "c" in ids) == 3
    assert dl.first_detection(order, lambda ids: True) == 2  # one item cannot be bounded: from 2
    assert dl.first_detection(order, lambda ids: False) is None
    assert dl.first_detection(order, lambda ids: len(ids) == 1, start=1) == 1


def test_median_count_puts_never_beyond_all_items() -> None:
    assert dl.median_count([2, 3, 4], 10) == "3"
    assert dl.median_count([2, None, None], 10) == ">10"
    assert dl.median_count([2, 4, None, None], 10) == "7.5"  # (4 + 11) / 2: a bound, the JSON keeps the counts
    assert dl.median_count([], 10) == "-"


def test_detection_counts_are_seeded() -> None:
    ids = [f"i{j}" for j in range(8)]
    detects = lambda got: "i3" in got  # noqa: E731
    first = dl.detection_counts(ids, detects, 20, seed=1)
    assert first == dl.detection_counts(ids, detects, 20, seed=1)
    assert all(c is not None and 2 <= c <= 8 for c in first)
    assert len(set(first)) > 1  # the orderings differ


def test_drift_detects_only_when_the_whole_interval_clears_the_floor() -> None:
    ids = [f"i{j}" for j in range(6)]
    floor = {i: 1e-4 for i in ids}
    high = {i: 0.05 + 0.001 * j for j, i in enumerate(ids)}
    assert dl.drift_detects(high, floor)(ids[:2])
    assert not dl.drift_detects(floor, floor)(ids)  # equal to the floor: never above it
    noisy = {i: (0.2 if j == 0 else 0.0) for j, i in enumerate(ids)}  # one item high: the interval reaches 0
    assert not dl.drift_detects(noisy, floor)(ids)


def _scored(item: str, right: bool) -> ScoredItem:
    return ScoredItem.model_validate({
        "item_id": item, "pack": "p", "prompt_hash": "h" + item, "output": "x",
        "fields": {"total": {"outcome": "correct" if right else "wrong_value"}},
        "kinds": {"total": "amount"}, "golds": {"total": "1"},
    })


def test_flips_fail_on_the_first_prefix_holding_a_harmful_flip() -> None:
    base = [_scored(f"i{j}", True) for j in range(5)]
    cand = [_scored(f"i{j}", j != 3) for j in range(5)]
    fails = dl.flips_fail(base, cand, GateConfig())
    assert not fails(["i0", "i1", "i2"])
    assert fails(["i0", "i3"])  # the default gate allows no harmful flip of an amount
    assert dl.first_detection(["i1", "i0", "i4", "i3", "i2"], fails) == 4
