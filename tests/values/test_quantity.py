"""quantity: value + unit, converted only where the factor is exact."""

from __future__ import annotations

from typing import Any

import pytest

from evalrun.evals.scoring import score_field


@pytest.mark.parametrize(("gold", "pred", "outcome", "sub", "opts"), [
    ("412.6 kg", "412.6 kg", "correct", None, {}),
    ("412.6 kg", "The gross weight is 412.6kg.", "correct", None, {}),
    ("412.6 kg", "412.6 kg (909.6 lb)", "correct", None, {}),  # restated in another unit: one value
    ("3482 kWh", "Consumption: 3'482 kWh", "correct", None, {}),
    ("3482 kWh", "3.482 MWh", "correct", None, {}),  # exact conversion
    ("2500 kg", "2.5 t", "correct", None, {}),
    ("2.5 t", "2,500 kilograms", "correct", None, {}),
    ("1200 m²", "1,200 m²", "correct", None, {}),
    ("1200 m²", "1200 square metres", "correct", None, {}),
    ("40 ft", "12.192 m", "correct", None, {}),  # 1 ft = 0.3048 m by definition
    ("40 ft", "480 in", "correct", None, {}),
    ("1 m³", "1000 litres", "correct", None, {}),
    ("412.6 kg", "412.6", "correct", None, {}),  # a bare number is read in the gold's unit
    ("412,6 kg", "412,6 kg", "correct", None, {"decimal": ","}),
    # must not be credited
    ("412.6 kg", "412.6 m", "wrong_value", "unit_mismatch", {}),
    ("40 ft", "12.2 m", "wrong_value", "rounding", {}),  # converted, then compared as numbers
    ("412.6 kg", "909.6 lb", "wrong_value", "rounding", {}),  # 412.5856 kg: the gold rounded, not credited
    ("412.6 kg", "413.6 kg", "wrong_value", "digit_changed", {}),
    ("2500 kg", "25 t", "wrong_value", "scale_error", {}),
    ("412.6 kg", "412.6 kg or 413 kg", "wrong_value", None, {}),
    ("412.6 kg", "-412.6 kg", "wrong_value", "sign_flip", {}),
    ("412.6 kg", None, "missing", None, {}),
    (None, "412.6 kg", "hallucinated", None, {}),
])
def test_quantity_table(gold: Any, pred: Any, outcome: str, sub: str | None, opts: dict[str, Any]) -> None:
    fs = score_field("quantity", gold, pred, **opts)
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


def test_conversion_is_named() -> None:
    fs = score_field("quantity", "2500 kg", "2.5 t")
    assert fs.detail == "converted from t" and (fs.gold_norm, fs.pred_norm) == ("2500 kg", "2.5 t")


def test_a_bare_gold_is_read_in_the_fields_declared_unit() -> None:
    """A `weight_kg` column holds bare numbers: with `unit: kg` its gold is 32680 kg, so
    "32.68 t" converts exactly and earns the credit; without the option it cannot."""
    assert score_field("quantity", "32680", "The total gross weight is 32.68 t.", unit="kg").outcome == "correct"
    assert score_field("quantity", "32680", "The total gross weight is 32.68 t.").outcome == "wrong_value"
    assert score_field("quantity", "32680", "32,68 t", unit="kg").outcome == "correct"
    assert score_field("quantity", "32680", "32.69 t", unit="kg").outcome == "wrong_value"
    assert score_field("quantity", "412.6 lb", "412.6", unit="kg").outcome == "correct"  # a gold's own unit wins
    assert score_field("quantity", "8200", "8,200 pieces", unit="pcs").outcome == "correct"  # a count is a unit too
    with pytest.raises(ValueError, match="unit must be one of"):
        score_field("quantity", "1", "1", unit="parsec")
