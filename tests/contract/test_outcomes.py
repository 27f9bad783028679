"""The outcome list is defined once, in the contract; the scorer, the metrics and the
report's browser read it from there (issue 28: it was written three times, with 7, 8 and
9 values)."""

from __future__ import annotations

from typing import get_args

from evalrun.contract.types import CORRECT_OUTCOMES, FIELD_OUTCOMES, OUTCOMES, Outcome
from evalrun.evals.scoring import OUTCOMES as SCORER_OUTCOMES
from evalrun.reports.view import OUTCOMES as BROWSER_OUTCOMES


def test_one_list_of_outcomes() -> None:
    assert OUTCOMES == get_args(Outcome) and len(set(OUTCOMES)) == len(OUTCOMES)
    assert SCORER_OUTCOMES is FIELD_OUTCOMES and set(OUTCOMES) - set(FIELD_OUTCOMES) == {"error"}
    assert BROWSER_OUTCOMES == [*OUTCOMES, "unanswered"]  # the browser's own state of an unanswered item
    assert CORRECT_OUTCOMES < set(FIELD_OUTCOMES)


def test_a_flip_is_right_at_baseline_and_not_in_the_candidate_or_the_reverse() -> None:
    from evalrun.contract.types import CORRECT_OUTCOMES, OUTCOMES, flip

    for b in OUTCOMES:
        for c in OUTCOMES:
            expected = (b in CORRECT_OUTCOMES and c not in CORRECT_OUTCOMES) - (c in CORRECT_OUTCOMES and b not in CORRECT_OUTCOMES)
            assert flip(b, c) == expected, (b, c)
    assert flip("correct", "wrong_value") == 1 and flip("missing", "correct_absent") == -1
    assert flip("correct", "correct_absent") == 0 and flip("error", "missing") == 0
