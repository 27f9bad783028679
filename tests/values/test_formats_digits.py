"""Digits of other scripts and apostrophe grouping, read through the public scorer:
Arabic-Indic (٠-٩) and Persian (۰-۹) digits with the Arabic decimal separator ٫ and
thousands separator ٬ in amounts, numbers and ids; "3'482 kWh" and 3’482 in a sentence."""

from __future__ import annotations

from typing import Any

import pytest

from evalrun.evals.scoring import score_field
from evalrun.values.text import prep

CREDIT: list[tuple[str, str, str, dict[str, Any]]] = [
    ("amount", "1234.50 SAR", "١٬٢٣٤٫٥٠ ر.س", {}),
    ("amount", "1234.50 SAR", "SAR ١٬٢٣٤٫٥٠", {}),
    ("amount", "1234.50 AED", "المبلغ الإجمالي: ١٬٢٣٤٫٥٠ درهم (AED)", {}),
    ("number", "1234.5", "۱۲۳۴٫۵", {}),
    ("number", "1234567", "۱٬۲۳۴٬۵۶۷", {}),
    ("number", "12.5", "١٢٫٥٪", {}),
    ("number", "250000", "\u200f۲۵۰٬۰۰۰\u200f", {}),  # with the bidi marks of right-to-left text
    ("number", "42", "४२", {}),  # Devanagari: every script's digits are digits
    ("id", "INV-2024-0042", "INV-٢٠٢٤-٠٠٤٢", {}),
    ("id", "4410023", "رقم الفاتورة: ٤٤١٠٠٢٣", {}),
    # apostrophe grouping inside a sentence, ASCII and U+2019
    ("number", "3482", "The consumption was 3'482 kWh.", {}),
    ("number", "3482", "The consumption was 3’482 kWh.", {"field": "consumption"}),
    ("number", "3482", "The consumption was 3'482kWh.", {}),
    ("amount", "1234.50 CHF", "Der Betrag ist CHF 1’234.50.", {}),
    ("number", "1234567", "1'234'567", {}),
    # one separator for groups and decimals alike: groups of three, then one or two decimals
    ("amount", "USD 1412.50", "The amount of freight re-charge is 1.412.50.", {}),
    ("number", "1412.5", "1,412,50", {}),
]

NO_CREDIT: list[tuple[str, str, str, dict[str, Any], str, str | None]] = [
    # a one-digit slip stays a one-digit slip, whatever the script or the grouping
    ("number", "1234.5", "۱۲۳۵٫۵", {}, "wrong_value", "digit_changed"),
    ("amount", "1234.50 SAR", "١٬٢٣٤٫٦٠ ر.س", {}, "wrong_value", "digit_changed"),
    ("number", "3482", "The consumption was 3'483 kWh.", {}, "wrong_value", "digit_changed"),
    ("number", "3482", "The consumption was 3’483 kWh.", {}, "wrong_value", "digit_changed"),
    ("number", "3482", "The consumption was 3'492kWh.", {}, "wrong_value", "digit_changed"),
    ("id", "INV-2024-0042", "INV-٢٠٢٤-٠٠٤٣", {}, "wrong_value", "one_char_edit"),
    # "1.412.50" is 1412.50: a slip in it stays a slip, and it is never 141250
    ("amount", "USD 1412.50", "The amount of freight re-charge is 1.412.59.", {}, "wrong_value", "digit_changed"),
    ("number", "141250", "1.412.50", {}, "wrong_value", "scale_error"),
    # groups that are not of three are no such number ("1.1.1.1", a date's "11.08.24")
    ("number", "1111", "1. 1.1.1.1", {}, "wrong_value", "unparseable"),
    # "3'482kWh" is never the 3 before the apostrophe
    ("number", "3", "The consumption was 3'482kWh.", {}, "wrong_value", None),
]


@pytest.mark.parametrize(("kind", "gold", "pred", "opts"), CREDIT)
def test_digits_earn_the_credit(kind: str, gold: str, pred: str, opts: dict[str, Any]) -> None:
    fs = score_field(kind, gold, pred, **opts)
    assert fs.outcome == "correct", fs


@pytest.mark.parametrize(("kind", "gold", "pred", "opts", "outcome", "sub"), NO_CREDIT)
def test_digits_that_must_not_earn_it(kind: str, gold: str, pred: str, opts: dict[str, Any], outcome: str,
                                      sub: str | None) -> None:
    fs = score_field(kind, gold, pred, **opts)
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


def test_prep_writes_every_scripts_digits_and_the_arabic_separators_in_ascii() -> None:
    assert prep("١٬٢٣٤٫٥٠") == "1,234.50"
    assert prep("۰۱۲۳۴۵۶۷۸۹") == "0123456789"
    assert prep("\u200f١٢\u200f") == "12"  # the bidi marks around a number are dropped
    assert prep("12,50 €") == "12,50 €"  # ASCII digits as they were
