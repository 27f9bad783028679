"""Dates in the formats a global finance team sends, read through the public scorer:
Japanese era dates, Hijri dates (converted with hijridate, Umm al-Qura), written
months in Dutch, Polish, Portuguese, Spanish and Italian, Arabic-Indic and Persian
digits. Each row of CREDIT earns the credit, each row of NO_CREDIT must not."""

from __future__ import annotations

from typing import Any

import pytest

from evalrun.evals.scoring import score_field
from evalrun.values.dates import DateParts, extract_dates, mask_dates
from evalrun.values.hijri import to_gregorian
from evalrun.values.months import MONTHS

CREDIT: list[tuple[str, str, dict[str, Any]]] = [
    # Japanese eras (and the Republic of China's years)
    ("2023-12-01", "令和5年12月1日", {}),
    ("2019", "令和元年", {}),
    ("2019-05-01", "令和元年5月1日", {}),
    ("2019-04-30", "平成31年4月30日", {}),
    ("1989", "昭和64年", {}),
    ("2023-12-01", "令和５年１２月１日", {}),
    ("2023-12-01", "The invoice is dated 令和5年12月1日.", {}),
    ("2023-12-01", "R5.12.1", {}),
    ("2019-04-30", "H31.4.30", {}),
    ("2024-03-05", "民國113年3月5日", {}),
    # Hijri dates, compared as Gregorian
    ("2024-03-25", "15 Ramadan 1445", {}),
    ("2024-03-25", "١٥ رمضان ١٤٤٥ هـ", {}),
    ("2024-03-25", "1445/09/15 AH", {}),
    ("2024-03-25", "15/09/1445 هـ", {}),
    ("2024-03-25", "Ramadan 15, 1445 AH", {}),
    ("2024-06-07", "1 Dhu al-Hijjah 1445", {}),
    ("2024-09-15", "12 Rabi' al-Awwal 1446", {}),
    # written months
    ("2023-04-12", "12 de abril de 2023", {}),
    ("2023-09-07", "7 settembre 2023", {}),
    ("2024-03-03", "3 maart 2024", {}),
    ("2024-05-05", "5 maja 2024", {}),
    ("2024-05-05", "5 maja 2024 r.", {}),
    ("2024-01-15", "15 stycznia 2024", {}),
    ("2024-10-02", "2 października 2024", {}),
    ("2024-03-01", "1º de março de 2024", {}),
    ("2024-03-01", "1 de marco de 2024", {}),
    ("2023-12-24", "24 de diciembre del 2023", {}),
    ("2024-08-12", "12 ago 2024", {}),
    ("2024-06-01", "1° giugno 2024", {}),
    ("2024-05", "mei 2024", {}),
    ("2024-03-15", "15 مارس 2024", {}),
    # Arabic-Indic and Persian digits
    ("2024-03-15", "١٥/٠٣/٢٠٢٤", {}),
    ("2024-03-15", "۱۵/۰۳/۲۰۲۴", {}),
    ("2024-03-15", "٢٠٢٤-٠٣-١٥", {}),
]

NO_CREDIT: list[tuple[str, str, dict[str, Any], str, str | None]] = [
    # a date outside its era is no date, never a guess
    ("2019-05-01", "平成31年5月1日", {}, "wrong_value", None),  # only the yearless 5月1日 is left
    ("1989-02-01", "昭和64年2月1日", {}, "wrong_value", None),
    ("2020-12-01", "令和5年12月1日", {}, "wrong_value", "wrong_year"),
    ("2023-12-02", "R5.12.1", {}, "wrong_value", "off_by_one_day"),
    # a Hijri day one off is one day off in the Gregorian calendar too
    ("2024-03-25", "16 Ramadan 1445", {}, "wrong_value", "off_by_one_day"),
    # a numeric date without the AH mark is Gregorian; a Hijri month and year alone name no Gregorian day
    ("2024-03-25", "1445/09/15", {}, "wrong_value", None),
    ("2024-03-25", "Ramadan 1445", {}, "wrong_value", "unparseable"),
    # an ambiguous numeric date stays ambiguous, whatever its digits
    ("2024-03-05", "٠٣/٠٥/٢٠٢٤", {"date_order": "ymd"}, "wrong_value", None),
    ("2024-04-12", "12 de abril de 2023", {}, "wrong_value", "wrong_year"),
    ("2024-09-08", "7 settembre 2024", {}, "wrong_value", "off_by_one_day"),
    # an everyday word that is also an abbreviation is no yearless date
    ("2024-08-05", "5 ago", {}, "wrong_value", "unparseable"),
]


@pytest.mark.parametrize(("gold", "pred", "opts"), CREDIT)
def test_dates_earn_the_credit(gold: str, pred: str, opts: dict[str, Any]) -> None:
    fs = score_field("date", gold, pred, **opts)
    assert fs.outcome == "correct", fs


@pytest.mark.parametrize(("gold", "pred", "opts", "outcome", "sub"), NO_CREDIT)
def test_dates_that_must_not_earn_it(gold: str, pred: str, opts: dict[str, Any], outcome: str,
                                     sub: str | None) -> None:
    fs = score_field("date", gold, pred, **opts)
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


def test_the_hijri_conversion_is_the_umm_al_qura_one_and_fails_closed() -> None:
    assert to_gregorian(1445, 9, 1) == (2024, 3, 11)  # 1 Ramadan 1445 AH
    assert to_gregorian(1445, 9, 31) is None
    assert to_gregorian(1200, 1, 1) is None  # outside the table: no date, not a guess


def test_era_and_hijri_dates_are_masked_before_amounts_are_read() -> None:
    assert score_field("amount", "1500 JPY", "令和5年12月1日に1,500円").outcome == "correct"
    assert score_field("number", "42", "15 Ramadan 1445: 42 items").outcome == "correct"
    assert mask_dates("R5.12.1").strip() == ""


def test_one_month_table_for_every_language() -> None:
    assert MONTHS["maart"] == MONTHS["marca"] == MONTHS["março"] == MONTHS["marzo"] == MONTHS["march"] == 3
    assert MONTHS["settembre"] == MONTHS["września"] == MONTHS["setembro"] == 9
    assert extract_dates("5 Mai 2024") == (DateParts(2024, 5, 5),)  # German, as before
