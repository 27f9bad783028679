"""Currencies named by Korean 원 and ₩, in words or by country, read through the public
scorer in amount fields and in enum currency fields (every allowed value an ISO code).
Each row of CREDIT earns the credit, each row of NO_CREDIT must not."""

from __future__ import annotations

from typing import Any

import pytest

from evalrun.evals.scoring import score_field
from evalrun.values.currencies import currency_mentions, stated_currency

CUR = {"allowed": ["CAD", "USD", "EUR", "CHF", "JPY", "KRW", "INR", "KWD", "GBP"]}

CREDIT: list[tuple[str, str, str, dict[str, Any]]] = [
    ("amount", "1500 KRW", "1,500원", {}),
    ("amount", "1500 KRW", "₩1,500", {}),
    ("amount", "1500 KRW", "1,500 won", {}),
    ("amount", "250000000 KRW", "2억 5천만 원", {}),
    ("amount", "2318.64 CAD", "The net pay is 2,318.64. The currency is Canadian dollars.", {}),
    ("enum", "KRW", "원", CUR),
    ("enum", "KRW", "₩", CUR),
    ("enum", "KRW", "금액은 원화로 표시됩니다.", CUR),
    ("enum", "KRW", "won", CUR),
    ("enum", "KRW", "South Korean won", CUR),
    ("enum", "CAD", "Canadian dollars", CUR),
    ("enum", "CAD", "the currency of Canada", CUR),
    ("enum", "CAD", "The amounts are in the currency of Canada.", CUR),
    ("enum", "CAD", "Canada's currency", CUR),
    ("enum", "CHF", "Swiss francs", CUR),
    ("enum", "JPY", "yen", CUR),
    ("enum", "JPY", "The document is in Japanese yen.", CUR),
    ("enum", "INR", "rupees", CUR),
    ("enum", "INR", "Indian rupees", CUR),
    ("enum", "GBP", "pounds sterling", CUR),
    ("enum", "EUR", "euros", CUR),
    ("enum", "EUR", "the currency of Germany", CUR),
    # a currency in a data row the answer copies (a CSV header) is no currency of the value
    ("amount", "15139.20 EUR", "The answer is 15.139,20.\n\n# System B (US subsidiary, en-US)\n"
     "DocNo,Date,Description,Amount USD\nUS-7710,06/", {}),
    ("enum", "KWD", "Kuwaiti dinar", CUR),
]

NO_CREDIT: list[tuple[str, str, str, dict[str, Any], str, str | None]] = [
    # "dinar" alone names none of the dinars
    ("enum", "KWD", "dinar", CUR, "wrong_value", "invalid_value"),
    # "dollars" alone names no one of the allowed dollars
    ("enum", "USD", "dollars", CUR, "wrong_value", "invalid_value"),
    # two currencies named: never credited
    ("enum", "KWD", "Kuwaiti dinar (DKK)", CUR, "wrong_value", None),
    ("enum", "CAD", "Canadian dollars, not euros", {"allowed": ["CAD", "EUR"]}, "correct", None),
    ("enum", "EUR", "Canadian dollars", CUR, "wrong_value", None),
    # a country named for another reason is no currency
    ("enum", "USD", "Shipped from Canada, paid in USD.", CUR, "correct", None),
    # an amount in won is not one in euros
    ("amount", "1500 EUR", "1,500원", {}, "wrong_value", "currency_mismatch"),
    ("amount", "2318.64 EUR", "The net pay is 2,318.64. The currency is Canadian dollars.", {},
     "wrong_value", "currency_mismatch"),
    # "won" the verb is no stated currency
    ("amount", "5000 EUR", "The total is 5,000. The contract was won by ACME.", {}, "correct", None),
    # a currency stated in prose apart from the value still counts, commas and all
    ("amount", "15139.20 EUR", "The answer is 15.139,20. The amounts are in USD, as listed, here.", {},
     "wrong_value", "currency_mismatch"),
    # commas that group a number make no data row
    ("amount", "1234567.89 EUR", "The total is 1,234,567.89. The currency is USD.", {},
     "wrong_value", "currency_mismatch"),
    ("amount", "1234567.89 EUR", "1,234,567.89\nThe currency is USD.", {}, "wrong_value", "currency_mismatch"),
    # 원 inside a Korean word (직원: employee) is no currency
    ("enum", "EUR", "직원 EUR", CUR, "correct", None),
]


@pytest.mark.parametrize(("kind", "gold", "pred", "opts"), CREDIT)
def test_currencies_earn_the_credit(kind: str, gold: str, pred: str, opts: dict[str, Any]) -> None:
    fs = score_field(kind, gold, pred, **opts)
    assert fs.outcome == "correct", fs


@pytest.mark.parametrize(("kind", "gold", "pred", "opts", "outcome", "sub"), NO_CREDIT)
def test_currencies_that_must_not_earn_it(kind: str, gold: str, pred: str, opts: dict[str, Any], outcome: str,
                                          sub: str | None) -> None:
    fs = score_field(kind, gold, pred, **opts)
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


def test_currency_words_keep_shared_names_shared() -> None:
    assert currency_mentions("paid in dollars", words=True) == [("dollars", "$")]
    assert currency_mentions("Canadian dollars", words=True) == [("Canadian dollars", "CAD")]
    assert currency_mentions("dinar", words=True) == []
    assert stated_currency("The currency is the currency of Japan.") == "JPY"


def test_a_country_written_as_three_capitals_names_its_currency_and_never_breaks_the_scorer() -> None:
    # "UAE" is three capitals that are no ISO code: it used to be dropped with the
    # symbols, and sorting it beside a mention without a code raised TypeError
    opts = {"allowed": ["AED", "SAR", "USD", "EUR"], "field": "currency"}
    assert score_field("enum", "AED", "The quotation is in the currency of UAE.", **opts).outcome == "correct"
    assert score_field("enum", "SAR", "The quotation is in the currency of UAE.", **opts).outcome == "wrong_value"
    s = score_field("enum", "AED", "Priced in the currency of UAE (EUR shown for reference).", **opts)
    assert s.outcome == "wrong_value" and "scorer error" not in (s.detail or "")


def test_a_currency_field_allowing_any_active_iso_code_still_reads_currencies_in_words() -> None:
    # with an allowed code the scorer did not know (IRR), names in words were not read at all
    opts = {"allowed": ["AED", "IRR", "USD"], "field": "currency"}
    assert score_field("enum", "AED", "The quotation is in the currency of UAE.", **opts).outcome == "correct"
    assert score_field("enum", "IRR", "Amounts are in IRR.", **opts).outcome == "correct"
