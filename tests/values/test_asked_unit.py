"""Of several numbers, each written with its unit, the one in the unit the question asks
for is the answer when the others are in other units (issue 27's audit set: "4.215 kWh x
24,85 Cent/kWh" for the energy price in cents per kWh); two in the asked unit, or a bare
number beside it, leave the answer ambiguous."""

from __future__ import annotations

import pytest

from evalrun.contract.types import CONTEXT_SEPARATOR
from evalrun.evals.scoring import score_field

DOC = "Jahresabrechnung Strom\nVerbrauch 4.215 kWh\nEnergiepreis 4.215 kWh x 24,85 Cent/kWh 1.047,43 €"
PRICE = "What is the energy price in cents per kWh? Answer with the number only."
WEIGHT = "What is the total gross weight in kg? Answer with the number only."
TENURE = "What is the loan tenure in months? Answer with the number only."


def S(gold: str, answer: str, question: str):
    return score_field("number", gold, answer, context=DOC + CONTEXT_SEPARATOR + question, field="value")


@pytest.mark.parametrize("gold,question,answer", [
    ("24.85", PRICE, "The energy price in cents per kWh is 4.215 kWh x 24,85 Cent/kWh ≈ 12.215 kWh x 24,85 Cent/kWh"),
    ("24.85", PRICE, "The energy price is 24,85 cents per kWh for 4.215 kWh."),
    ("32680", WEIGHT, "The total gross weight in kg is 32680 kg, in 21 crates."),
    ("36", TENURE, "The loan tenure in months is 36 months, i.e. 3 years."),
])
def test_the_value_in_the_asked_unit_earns_the_credit(gold: str, question: str, answer: str) -> None:
    s = S(gold, answer, question)
    assert s.outcome == "correct", s


@pytest.mark.parametrize("gold,question,answer,sub", [
    # a slip in the value read stays a slip
    ("24.85", PRICE, "The energy price in cents per kWh is 4.215 kWh x 24,86 Cent/kWh", "digit_changed"),
    # two values in the asked unit: several values, none read
    ("24.85", PRICE, "The energy price in cents per kWh is 24,85 Cent/kWh, or 29,82 Cent/kWh with VAT.", None),
    # a bare number beside it is in no unit: nothing is chosen
    ("24.85", PRICE, "The energy price in cents per kWh is 4.215 kWh x 24,85 = 1047,43", None),
    # a word after a number that is no unit says nothing of what the number is
    ("24.85", PRICE, "The energy price in cents per kWh is 24,85 Cent/kWh, previously 26 and rising.", None),
    ("24.85", PRICE, "The energy price in cents per kWh is 24,85 Cent/kWh, 26 in Graz.", None),
    # the question asks for no unit the answer writes: nothing is chosen
    ("32680", "What is the total gross weight? Answer with the number only.",
     "The total gross weight is 32680 kg, in 21 crates.", None),
])
def test_what_must_not_earn_it(gold: str, question: str, answer: str, sub: str | None) -> None:
    s = S(gold, answer, question)
    assert (s.outcome, s.subcode) == ("wrong_value", sub), s
