"""With no value of the field's type in the answer, a reviewer tells two cases apart:
something given for the field (a value of another shape: `wrong`) and nothing given
for it (babble, copied lines, a sentence about something else: `missing`). Answers
from issue 27's audit set, with the question the model was asked."""

from __future__ import annotations

from typing import Any

import pytest

from evalrun.contract.types import CONTEXT_SEPARATOR
from evalrun.evals.scoring import OTHER_SHAPE, score_field

DOC = "Sample document.\nTotal: EUR 10.00"


def S(kind: str, gold: Any, pred: str, question: str, **opts: Any):
    return score_field(kind, gold, pred, context=DOC + CONTEXT_SEPARATOR + question, **opts)


@pytest.mark.parametrize("kind,gold,question,answer,opts", [
    ("checked_id", "DE44500105175407324931", "What is the IBAN of the settlement account?",
     "The IBAN of the settlement account is: EUR250.00\n\nThe IBAN is a currency code.", {"scheme": "iban"}),
    ("quantity", "3482 kWh", "How many kWh were consumed at the high tariff (Hochtarif)?",
     "12.07.2024.\n\nThe total kWh consumed at the high tariff is 12.07.2024.", {}),
    ("date", "2024-04-01", "On which date does the contract period start?",
     "The contract period starts on the 15th of the month of the given date.", {}),
    ("checked_id", "BE0456789133", "What is the seller's VAT number? Answer with the number only.",
     "1000,00 €\n\nWhat is the seller's VAT number? Answer with the number only.", {"scheme": "vat"}),
])
def test_a_value_of_another_shape_given_for_the_field_is_wrong(kind: str, gold: str, question: str, answer: str,
                                                                 opts: dict[str, Any]) -> None:
    s = S(kind, gold, answer, question, **opts)
    assert s.outcome == "wrong_value", s


@pytest.mark.parametrize("kind,gold,question,answer", [
    ("date", "2024-05-05", "Until which date is the sanction valid?",
     "PUNJAB & SIND COOPERATIVE BANK LTD. - Retail Loots Hub, andheri, Mumbai 400076\n\n\nPUNJAB & SIND COOPERATIVE"),
    ("date", "2023-04-12", "On which date was the contract signed?",
     "Cláusula 6.ª - O preço anterior, de 17 de 2023 a 2023,000 €, fica 2023.\nCl"),
    ("quantity", "4215 kWh", "How many kWh were consumed in 2023?",
     "Abrechnungszeitraum 01.01.2023 – 1.12.2023 laut Zählerstand und Vorjahresperiode"),
    ("percent", "4.75", "What interest margin in percent per annum above EURIBOR applies?",
     "The interest margin in percent per annum above EURIBOR applies to the loan facility offered by the "
     "Hartwell Precision Engineering Ltd (FCO) on 9 April 2024."),
    ("amount", "KRW 18942000", "What is the total amount including tax (합계금액)?",
     "The total amount including tax includes tax (2024년 4월 30일)\n\n전자세금계산서"),
    ("percent", "14.6", "What late-payment interest rate in percent applies?", "このアプリエアは、アプリエアでは、アプリエアのアプリ"),
])
def test_nothing_given_for_the_field_is_missing(kind: str, gold: str, question: str, answer: str) -> None:
    s = S(kind, gold, answer, question)
    assert s.outcome == "missing", s


def test_without_the_question_a_damaged_value_stays_wrong() -> None:
    """Nothing names the field: the old rule holds, a value-like token is a damaged value."""
    s = score_field("amount", "EUR 14851.20", "The total is 14,851.2O EUR.")
    assert (s.outcome, s.subcode) == ("wrong_value", "unparseable")


@pytest.mark.parametrize("answer,outcome", [
    ("Exporter: KO-EXP-2024-0117\nCustoms office: Hamburg-Waltershof (DE004852)", "missing"),  # labels of other things
    ("Subtotal: EUR 450.00\nVAT: EUR 50.00", "wrong_value"),  # two amounts offered, neither the total
    ("La résultat est 1 500,00 €", "wrong_value"),
    ("S/4HANA 10000004602  Kreditor 300417 Sandvik Coromant GmbH, Düsseldorf    Währung EUR", "missing"),
])
def test_label_lines_and_verbs(answer: str, outcome: str) -> None:
    assert S("amount", "EUR 500", answer, "What is the invoice total?").outcome == outcome


def test_the_other_shape_has_its_own_detail() -> None:
    s = S("checked_id", "DE44500105175407324931", "The IBAN of the settlement account is: EUR250.00",
          "What is the IBAN of the settlement account?", scheme="iban")
    assert s.detail == OTHER_SHAPE.format(kind="checked_id")


# outline numbers ("1.1.1.2") number an answer's lines: an answer of nothing else gives no value
@pytest.mark.parametrize("kind,gold,answer,outcome", [
    ("number", "400", "1. 1.1.1.1\n2. 1.1.1.2\n3. 1.1.1.3\n4. 1.1.1.4\n5. 1", "missing"),
    ("number", "400", "1.1.1.1\n1.1.1.2\n1.1.1.3", "missing"),
    ("number", "400", "1.2.1.4 Surgical gloves: 400 boxes", "correct"),
    ("number", "401", "1.2.1.4 Surgical gloves: 400 boxes", "wrong_value"),
    # three groups are a date's, or a number's: never an outline number
    ("date", "2024-07-12", "12.07.24", "correct"),
    ("number", "1.5", "1.5", "correct"),
])
def test_outline_numbers_are_no_value(kind: str, gold: str, answer: str, outcome: str) -> None:
    s = S(kind, gold, answer, "How many boxes of surgical gloves were invoiced?", date_order="dmy")
    assert s.outcome == outcome, s


_CURRENCY = {"allowed": ["EUR", "KRW", "USD"], "synonyms": {"won": "KRW"}}


@pytest.mark.parametrize("answer,opts,outcome,sub", [
    # digits alone offer no currency: babble, no value
    ("100000000000000100000000000000000000000000000000", _CURRENCY, "missing", None),
    ("1 000 000", _CURRENCY, "missing", None),
    # a currency named beside the digits is offered, and read
    ("100000000 KRW", _CURRENCY, "correct", None),
    ("100000000 USD", _CURRENCY, "wrong_value", None),
    # where the allowed values are digits, a digit is one offered
    ("4", {"allowed": ["1", "2", "3"]}, "wrong_value", "invalid_value"),
])
def test_digits_alone_offer_no_enum_value_written_in_letters(answer: str, opts: dict[str, Any], outcome: str,
                                                             sub: str | None) -> None:
    gold = "2" if opts["allowed"][0] == "1" else "KRW"
    s = S("enum", gold, answer, "In which currency are the amounts? Answer with the currency only.", **opts)
    assert (s.outcome, s.subcode) == (outcome, sub), s
