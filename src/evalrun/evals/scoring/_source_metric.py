"""An imported item's outcome from the source harness's own per-sample metric (lm-eval `exact_match`, Inspect's
"C"/"I"), for a field whose options name one (`source_metric`). Only pass/fail values are outcomes (`is_pass_fail`)."""

from __future__ import annotations

import math
from typing import Any

from evalrun.contract.types import FieldScore

SOURCE_METRIC = "source_metric"  # the Field option naming the value its outcome comes from

# Inspect's value_to_float letters: CORRECT, INCORRECT, PARTIAL, NOANSWER
_LETTERS = {"C": "correct", "I": "wrong_value", "P": "partial", "N": "missing"}
_WORDS = {"true": "correct", "yes": "correct", "correct": "correct",
          "false": "wrong_value", "no": "wrong_value", "incorrect": "wrong_value"}


def outcome_of(value: Any) -> str | None:
    """The outcome a pass/fail value stands for (None: not a pass/fail value)."""
    if isinstance(value, bool):
        return "correct" if value else "wrong_value"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return None
        return ("correct" if value == 1 else "wrong_value") if value in (0, 1) else None
    if isinstance(value, str):
        text = value.strip()
        if text in _LETTERS:
            return _LETTERS[text]
        if text.lower() in _WORDS:
            return _WORDS[text.lower()]
        try:
            return outcome_of(float(text))
        except ValueError:
            return None
    return None


def is_pass_fail(values: list[Any]) -> bool:
    """Every value (None: not scored for that sample) reads as pass or fail, and one at least is there."""
    present = [v for v in values if v is not None]
    return bool(present) and all(outcome_of(v) is not None for v in present)


def source_score(name: str, scores: dict[str, Any] | None, gold: str | None, output: str | None) -> FieldScore:
    """The outcome from stored metric `name`: correct for 1/true/"C"; not recorded for the sample: `missing`."""
    value = (scores or {}).get(name)
    outcome = outcome_of(value)
    if outcome is None:
        detail = (f"the source recorded no {name} for this sample" if value is None
                  else f"{name} = {value!r} is not a pass/fail value")
        return FieldScore(outcome="missing", gold_norm=gold, pred_norm=output, detail=detail)
    return FieldScore(outcome=outcome, gold_norm=gold, pred_norm=output, detail=f"source metric {name} = {value!r}")  # pyright: ignore[reportArgumentType]
