"""Unit words that scale the number before them, read through the public scorer:
each row of CREDIT earns the credit, each row of NO_CREDIT must not (a one-digit slip
stays digit_changed, a lakh-grouped number is never a scale, "5 m" is five metres)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from evalrun.evals.scoring import score_field
from evalrun.values.amounts import extract_amounts

CREDIT: list[tuple[str, str, str, dict[str, Any]]] = [
    ("amount", "250000000 JPY", "2.5億円", {}),
    ("number", "400000", "40万", {}),
    ("amount", "12000 CNY", "1.2万元", {}),
    ("amount", "1500000 EUR", "EUR 1.5 million", {}),
    ("amount", "2300000000 USD", "USD 2.3 bn", {}),
    ("amount", "2300000000 USD", "USD 2.3 billion", {}),
    ("number", "1200000", "12 lakh", {}),
    ("number", "35000000", "3.5 crore", {}),
    ("amount", "12000000 INR", "₹1.2 crore", {}),
    ("amount", "1500000 EUR", "1.5 Mio. €", {}),
    ("number", "2000000000", "2 Mrd.", {}),
    ("amount", "120000000 JPY", "1億2,000万円", {}),
    ("amount", "15000 JPY", "1万5000円", {}),
    ("amount", "250000000 KRW", "2억 5천만 원", {}),
    ("amount", "1500000 USD", "$1.5M", {}),
    ("amount", "1500000 EUR", "1,5 M€", {}),
    ("amount", "1500000 EUR", "The total is 1.5 million euros.", {"field": "total"}),
    ("amount", "2000000000 EUR", "2 mil millones de euros", {}),
    ("amount", "2500000 PLN", "2,5 mln zł", {}),
]

NO_CREDIT: list[tuple[str, str, str, dict[str, Any], str, str | None]] = [
    # a one-digit slip in a scaled amount is still a one-digit slip
    ("amount", "1500000 EUR", "EUR 1.6 million", {}, "wrong_value", "digit_changed"),
    ("amount", "250000000 JPY", "2.6億円", {}, "wrong_value", "digit_changed"),
    # the scale itself wrong: a scale error, never credited
    ("amount", "1500000000 EUR", "EUR 1.5 million", {}, "wrong_value", "scale_error"),
    ("number", "12000000", "12 lakh", {}, "wrong_value", "scale_error"),
    # "5 m" is five metres, not five million
    ("number", "5000000", "5 m", {}, "wrong_value", "scale_error"),
    # "M" alone (no currency) is no scale: glued it is no amount at all, as before
    ("number", "5000000", "5M", {}, "wrong_value", "unparseable"),
    # units that do not fall from left to right are no amount
    ("amount", "1020000 JPY", "1万2億円", {}, "wrong_value", "unparseable"),
]


@pytest.mark.parametrize(("kind", "gold", "pred", "opts"), CREDIT)
def test_scaled_amounts_earn_the_credit(kind: str, gold: str, pred: str, opts: dict[str, Any]) -> None:
    fs = score_field(kind, gold, pred, **opts)
    assert fs.outcome == "correct", fs


@pytest.mark.parametrize(("kind", "gold", "pred", "opts", "outcome", "sub"), NO_CREDIT)
def test_scaled_amounts_that_must_not_earn_it(kind: str, gold: str, pred: str, opts: dict[str, Any],
                                              outcome: str, sub: str | None) -> None:
    fs = score_field(kind, gold, pred, **opts)
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


@pytest.mark.parametrize("pred", ["₹12,34,567.89", "INR 12,34,567.89", "Rs. 12,34,567.89 only"])
def test_lakh_grouping_is_never_a_scale(pred: str) -> None:
    assert score_field("amount", "1234567.89 INR", pred).outcome == "correct"
    slip = score_field("amount", "1234567.89 INR", pred.replace("567", "568"))
    assert (slip.outcome, slip.subcode) == ("wrong_value", "digit_changed")


def test_scaled_values_are_written_out_and_keep_their_currency() -> None:
    assert extract_amounts("EUR 1.5 million")[0].value == Decimal("1500000")
    assert str(extract_amounts("2.5億円")[0].value) == "250000000"
    assert extract_amounts("40万")[0].currency is None
    assert extract_amounts("$1.5M")[0].currency == "$"
    assert extract_amounts("5 m") == extract_amounts("5")  # metres: no scale
