"""Residual disagreements with a blind reviewer (issue 43, case 11), one class each, with
the negatives that keep each fix from giving false credit."""

from __future__ import annotations

import pytest

from evalrun.contract.types import CONTEXT_SEPARATOR
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


# a second number that the answer itself gives to another line item is no candidate for the field
@pytest.mark.parametrize("answer", [
    "EUR 1,250.00, of which EUR 50.00 is shipping.",
    "EUR 1,250.00, and EUR 50.00 is charged for shipping.",
    "EUR 1,250.00, including EUR 50.00 for shipping.",
    "The total is EUR 1,250.00, of which EUR 50.00 is tax.",
    "EUR 1,250.00, and the discount is EUR 50.00.",
    "EUR 1,250.00, after a deposit of EUR 300.00.",
])
def test_a_number_given_to_another_line_item_is_no_candidate(answer: str) -> None:
    for field in ("total", "total_due"):
        s = score_field("amount", "EUR 1250.00", answer, field=field)
        assert (s.outcome, s.pred_norm) == ("correct", "1250.00 EUR"), (field, s)
    s = score_field("amount", "EUR 1300.00", answer, field="total")
    assert (s.outcome, s.pred_norm) == ("wrong_value", "1250.00 EUR")


@pytest.mark.parametrize("answer", [
    "EUR 1,250.00 or EUR 1,300.00",  # two values for the field
    "EUR 1,250.00, EUR 1,300.00 with shipping.",  # a total with shipping is no shipping line
    "EUR 1,250.00, and EUR 1,300.00 is charged.",  # charged for nothing named
    "EUR 1,250.00, and EUR 1,300.00 is outstanding.",
])
def test_a_second_number_not_given_to_another_item_stays_a_candidate(answer: str) -> None:
    for gold in ("EUR 1250.00", "EUR 1300.00"):  # no credit for either value
        s = score_field("amount", gold, answer, field="total")
        assert s.outcome in ("wrong_value", "missing") and s.pred_norm == "1250.00 EUR | 1300.00 EUR", s
    assert score_field("amount", "EUR 1250.00", "EUR 1,250.00 or EUR 1,300.00", field="total").detail == (
        "ambiguous: several candidates")


def test_a_second_number_given_to_this_field_still_counts() -> None:
    # the answer says the total is 1,300.00: never credit for the other number
    s = score_field("amount", "EUR 1250.00", "EUR 1,250.00, and EUR 1,300.00 is the total.", field="total")
    assert s.outcome == "wrong_value"
    s = score_field("amount", "EUR 50.00", "EUR 1,250.00, of which EUR 50.00 is shipping.", field="shipping")
    assert s.outcome != "correct" or s.pred_norm == "50.00 EUR"
    # a date's year after its comma is no clause of its own
    s = score_field("date", "2024-03-05", "The due date is March 5, 2024, and the invoice date is March 1, 2024.",
                    field="due_date")
    assert s.outcome == "correct"


# the separator convention settled by the answer's or the document's own numbers
_EN_DOC = "INVOICE 2024-117\nUnit price: 12.500 EUR per kg\nTotal: EUR 1,250.00\n"
_DE_DOC = "RECHNUNG 2024-117\nEinzelpreis: 12.500 EUR\nGesamtbetrag: EUR 1.250,00\n"


def _ask(doc: str, question: str = "What is the unit price?") -> str:
    return doc + CONTEXT_SEPARATOR + question


@pytest.mark.parametrize("answer,context", [
    ("12.500", _ask(_EN_DOC)),  # the document writes 1,250.00
    ("The unit price is EUR 12.500.", _ask(_EN_DOC)),
    ("The unit price is 12.500; the total is 1,250.00.", None),  # the answer itself writes 1,250.00
])
def test_a_third_decimal_zero_in_an_english_text_is_a_decimal(answer: str, context: str | None) -> None:
    s = score_field("amount", "12.5", answer, context=context, field="unit_price")
    assert s.outcome == "correct", s
    assert score_field("amount", "12500", answer, context=context, field="unit_price").subcode == "scale_error"


def test_a_german_or_unsettled_text_keeps_the_thousands_reading() -> None:
    s = score_field("amount", "12500", "12.500", context=_ask(_DE_DOC), field="unit_price")
    assert s.outcome == "correct", s
    s = score_field("amount", "12500", "Der Einzelpreis ist 12.500; der Gesamtbetrag ist 1.250,00.",
                    field="einzelpreis")
    assert s.outcome == "correct", s
    # nothing settles the convention, or the evidence disagrees: the reading stays as it was
    assert score_field("amount", "12500", "12.500", field="unit_price").outcome == "correct"
    mixed = "Unit price 12.500\nTotal: EUR 1,250.00\nGesamt: EUR 1.250,00\n"
    assert score_field("amount", "12500", "12.500", context=_ask(mixed), field="unit_price").outcome == "correct"
    # the answer's own evidence wins over the document's
    s = score_field("amount", "12500", "12.500 (gesamt 1.250,00)", context=_ask(_EN_DOC), field="unit_price")
    assert s.outcome == "correct" or s.pred_norm.startswith("12500"), s
    # an explicit option still decides, and golds are read as before
    assert score_field("amount", "12500", "12.500", context=_ask(_EN_DOC), field="unit_price",
                       decimal="auto").outcome == "correct"
    assert score_field("amount", "12.500", "12500", context=_ask(_EN_DOC), field="unit_price").outcome == "correct"
