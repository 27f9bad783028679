"""time_of_day: one file under values/types/ makes a field type; the contract tests
(test_field_type_contract.py) cover it by name, these pin how it reads and compares."""

from __future__ import annotations

import pytest

from evalrun.evals.scoring import score_field
from evalrun.values.registry import field_type, type_names, typed_names


@pytest.mark.parametrize(("written", "minutes"), [
    ("14:30", 870), ("2:30 pm", 870), ("2:30 p.m.", 870), ("14h30", 870), ("14:30:15", 870),
    ("9 am", 540), ("12 am", 0), ("12:15 pm", 735), ("00:00", 0), ("23:59", 1439),
])
def test_times_read_as_minutes_since_midnight(written: str, minutes: int) -> None:
    assert field_type("time_of_day").gold(written, field_type("time_of_day").options({})) == minutes


@pytest.mark.parametrize("written", ["14", "24:00", "12:60", "13 pm", "0 am", "2024-03-14", "EUR 14.30", "v1:30x"])
def test_what_is_no_time(written: str) -> None:
    assert field_type("time_of_day").gold(written, field_type("time_of_day").options({})) is None


def test_the_type_is_registered_by_its_file_alone() -> None:
    assert "time_of_day" in type_names() and "time_of_day" in typed_names()


@pytest.mark.parametrize(("gold", "answer", "outcome", "subcode"), [
    ("14:30", "The meeting starts at 2:30 pm.", "correct", None),
    ("14:30", "14h30", "correct", None),
    ("14:30", "2:30", "wrong_value", "am_pm_swap"),
    ("09:00", "9 pm", "wrong_value", "am_pm_swap"),
    ("14:30", "15:30", "wrong_value", None),
    ("14:30", "half past two", "wrong_value", "unparseable"),
    ("14:30", "Either 14:30 or 16:00.", "wrong_value", None),
    ("14:30", "Not stated.", "missing", None),
    (None, "Not stated.", "correct_absent", None),
    (None, "10:15", "hallucinated", None),
])
def test_scoring(gold: str | None, answer: str, outcome: str, subcode: str | None) -> None:
    fs = score_field("time_of_day", gold, answer)
    assert (fs.outcome, fs.subcode) == (outcome, subcode), fs
    if outcome == "correct":
        assert fs.gold_norm == fs.pred_norm == "14:30"
