"""percent: the readings that earn the credit, and the ones that must not."""

from __future__ import annotations

from typing import Any

import pytest

from evalrun.evals.scoring import score_field


@pytest.mark.parametrize(("gold", "pred", "outcome", "sub", "opts"), [
    ("19%", "19 %", "correct", None, {}),
    ("19%", "19%", "correct", None, {}),
    ("19%", "The VAT rate is 19 percent.", "correct", None, {}),
    ("19%", "19 per cent", "correct", None, {}),
    ("7.7%", "7,7 %", "correct", None, {}),
    ("7.7%", "Der Satz beträgt 7,7 Prozent.", "correct", None, {}),
    ("19%", "19", "correct", None, {}),  # no sign: read in percent
    ("19%", "19% of EUR 1,000.00", "correct", None, {}),  # a marked value: the unmarked money is another fact
    ("-0.5%", "−0.5 %", "correct", None, {}),
    ("19", "19%", "correct", None, {}),
    # must not be credited
    ("19%", "0.19", "wrong_value", "scale_error", {}),  # a fraction is another number
    ("19%", "1.9%", "wrong_value", "scale_error", {}),
    ("19%", "-19%", "wrong_value", "sign_flip", {}),
    ("12.5%", "13.5%", "wrong_value", "digit_changed", {}),
    ("19%", "EUR 19", "wrong_value", "unparseable", {}),  # money is no rate
    ("19%", "7% or 19%", "wrong_value", None, {}),  # two rates
    ("7.7%", "7,7", "correct", None, {}),
    ("19%", None, "missing", None, {}),
    (None, "19%", "hallucinated", None, {}),
    (None, "The document does not state a VAT rate.", "correct_absent", None, {}),
])
def test_percent_table(gold: Any, pred: Any, outcome: str, sub: str | None, opts: dict[str, Any]) -> None:
    fs = score_field("percent", gold, pred, **opts)
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


def test_percent_norms() -> None:
    fs = score_field("percent", "19 %", "0.19")
    assert (fs.gold_norm, fs.pred_norm) == ("19%", "0.19")
