"""Residual disagreements with a blind reviewer (issue 43, case 11), one class each, with
the negatives that keep each fix from giving false credit."""

from __future__ import annotations

import pytest

from evalrun.evals.scoring import REFUSAL, score_field

CURRENCIES = ["CHF", "EUR", "USD", "JPY", "CAD", "GBP", "CNY"]


# a refusal phrased as an impossibility is a refusal
@pytest.mark.parametrize("answer", [
    "It is not possible to determine the delivery date.",
    "It is not possible to determine the delivery date from the document.",
    "It's impossible to tell the delivery date from this invoice.",
    "The delivery date cannot be determined.",
    "The delivery date cannot be determined from the text provided.",
])
def test_an_impossibility_is_a_refusal(answer: str) -> None:
    assert score_field("date", None, answer, field="delivery_date").outcome == "correct_absent"
    s = score_field("date", "2024-05-02", answer, field="delivery_date")
    assert (s.outcome, s.detail) == ("missing", REFUSAL)


def test_an_impossibility_about_something_else_leaves_the_value_standing() -> None:
    s = score_field("date", "2024-05-02", "The delivery date is 2 May 2024; it is not possible to determine the "
                    "carrier.", field="delivery_date")
    assert s.outcome == "correct"
    s = score_field("date", "2024-05-02", "2 May 2024. It is not possible to determine the delivery date.",
                    field="delivery_date")
    assert (s.outcome, s.subcode) == ("wrong_value", "self_contradicting")


# a currency named by its country's adjective
@pytest.mark.parametrize("answer,code", [
    ("The amount is payable in Swiss currency.", "CHF"), ("Payment is due in British currency.", "GBP"),
    ("in the local Japanese currency", "JPY"), ("The invoice is in Canadian currency.", "CAD"),
    ("Chinese currency", "CNY"),
])
def test_a_currency_named_by_its_country_adjective(answer: str, code: str) -> None:
    assert score_field("enum", code, answer, allowed=CURRENCIES, field="currency").outcome == "correct"


def test_an_adjective_without_currency_names_none() -> None:
    # "Swiss" alone is a nationality ("a Swiss supplier"), not a currency
    s = score_field("enum", "EUR", "The Swiss supplier invoices in EUR.", allowed=CURRENCIES, field="currency")
    assert s.outcome == "correct"
    s = score_field("enum", "EUR", "Payable in Swiss currency.", allowed=CURRENCIES, field="currency")
    assert (s.outcome, s.pred_norm) == ("wrong_value", "chf")


# an amount followed by a bracketed percentage
@pytest.mark.parametrize("answer", ["Tax: 512.40 (8%)", "The tax is USD 512.40 (8%).", "VAT (8 %): 512.40",
                                    "512.40 (8 percent)"])
def test_a_percentage_beside_an_amount_is_no_sum_of_money(answer: str) -> None:
    s = score_field("amount", "512.40", answer, field="tax")
    assert (s.outcome, s.pred_norm) == ("correct", "512.40") or (s.outcome == "correct" and "512.40" in s.pred_norm)


def test_the_bracketed_percentage_is_still_read_for_a_percent_field() -> None:
    assert score_field("percent", "8", "Tax: 512.40 (8%)", field="tax_rate").outcome == "correct"
    assert score_field("percent", "8", "VAT (8 %): 512.40", field="vat_rate").outcome == "correct"
    # a percentage with no parentheses is read as before (a number field reads "12.5%" as 12.5)
    assert score_field("number", "8", "The rate is 8%.", field="rate").outcome == "correct"


# a loop of a plain value line still states that value: a reviewer reads it
@pytest.mark.parametrize("answer", ["EUR 1,300.00 " * 10, "1,300.00\n" * 10, "EUR 1,300.00, " * 8])
def test_a_loop_of_one_value_states_it(answer: str) -> None:
    s = score_field("amount", "EUR 1250.00", answer, field="total_due")
    assert (s.outcome, s.pred_norm) == ("wrong_value", "1300.00 EUR") or (s.outcome, s.pred_norm) == (
        "wrong_value", "1300.00")
    assert score_field("amount", "EUR 1300.00", answer, field="total_due").outcome == "correct"


def test_a_loop_of_several_values_still_states_none() -> None:
    s = score_field("amount", "EUR 1250.00", "EUR 1,300.00 EUR 20.00 " * 6, field="total_due")
    assert s.outcome in ("missing", "wrong_value") and s.outcome != "correct"
