"""Unit tests of the answer-reading pieces behind the reviewer classes: shared
currency symbols, list markers, clauses and field names, denials, decimals and
the date order. The scorer's behaviour as a whole is pinned by
tests/evals/test_fields_review.py."""

from __future__ import annotations

from decimal import Decimal

import pytest

from evalrun.contract.types import Field, Generation, Item
from evalrun.evals.scoring import score_item
from evalrun.values import AmbiguousDate, DateParts, extract_dates, interpret_number, mask_list_markers, same_currency
from evalrun.values.clauses import field_names, names_field, split_clauses
from evalrun.values.currencies import currency_code
from evalrun.values.denials import denial_targets, mask_references


def test_shared_symbols_stay_shared_until_compared() -> None:
    assert currency_code("$") == "$" and currency_code("C$") == "CAD" and currency_code("US$") == "USD"
    assert currency_code("kr") == "kr" and currency_code("SFr.") == "CHF" and currency_code("dollars") == "$"
    assert same_currency("$", "CAD") and same_currency("CAD", "$") and same_currency("$", "$")
    assert not same_currency("$", "EUR") and not same_currency("$", "¥") and not same_currency("CAD", "USD")
    assert same_currency("kr", "ISK") and same_currency("¥", "CNY") and same_currency("£", "EGP")


@pytest.mark.parametrize("num, decimal, three, expected", [
    ("1234.560", None, False, "1234.56"),
    ("1234,560", None, False, "1234.56"),
    ("1234,560", "auto", False, "1234.56"),
    ("1,234", "auto", False, "1234"),
    ("12.500", "auto", True, "12.5"),
    ("3,250", "auto", True, "3.25"),
    ("1,234,567", "auto", True, "1234567"),
])
def test_decimal_separator_after_long_heads_and_in_three_decimal_currencies(
        num: str, decimal: str | None, three: bool, expected: str) -> None:
    assert interpret_number(num, decimal, three) == Decimal(expected)


def test_list_markers_are_blanked_in_place() -> None:
    assert mask_list_markers("1. 2023-04-27") == "   2023-04-27"
    assert mask_list_markers("- EUR 5\n* 6\n\u2022 7") == "  EUR 5\n  6\n  7"
    assert mask_list_markers("3. a\n4. b") == "   a\n   b"  # numbered lines: a list
    assert mask_list_markers("24. It is due.") == "24. It is due."  # one line, not its first item
    assert mask_list_markers("1.5 kg") == "1.5 kg" and mask_list_markers("-5") == "-5" and mask_list_markers("1.") == "1."


def test_clauses_split_sentences_but_not_abbreviations_or_dates() -> None:
    text = "1. Issued 14. März 2024. Due Mar. 14th 2024.\n2. Invoice No. 5 is paid; J. Smith signed."
    assert split_clauses(text) == ["Issued 14. März 2024.", "Due Mar. 14th 2024.", "Invoice No. 5 is paid",
                                   "J. Smith signed."]
    assert split_clauses("The total is EUR 5, but the VAT is not stated.", fine=True) == [
        "The total is EUR 5", "the VAT is not stated."]


def test_a_clause_names_a_field_by_all_its_words() -> None:
    deposit = field_names("tenancy_deposit")
    assert names_field("The tenancy deposit is £5", deposit) and names_field("Tenancy deposits: £5", deposit)
    assert not names_field("The deposit is £5", deposit)
    total = field_names("total")
    assert not names_field("Subtotal: 5", total) and not names_field("Sub-total: 5", total)
    assert names_field("Due-date: 2024-04-13", field_names("due_date"))
    assert names_field("Balance: 5", field_names("amount_due", ["balance"]))
    assert field_names(None) == ()


def test_denials_say_what_they_are_about() -> None:
    assert denial_targets("the document does not mention the carrier") == ["does not mention the carrier"]
    assert denial_targets("no due date is given") == ["no due date is given"]
    assert denial_targets("the total is not stated") == ["the total is not stated"]
    assert denial_targets("total eur 500 with vat not shown") == ["500 with vat not shown"]
    for clean in ("the invoice is not paid", "the total not including vat is eur 5", "the total does not include vat",
                  "invoice no 12345 is listed"):
        assert denial_targets(clean) == [], clean
    assert mask_references("Section 4 and page 12 and § 3") == " " * 9 + " and " + " " * 7 + " and " + " " * 3


def test_date_order_reads_numeric_dates() -> None:
    assert extract_dates("04/09/2024", "dmy") == (DateParts(2024, 9, 4),)
    assert extract_dates("04/09/2024", "mdy") == (DateParts(2024, 4, 9),)
    assert extract_dates("04/09/2024", False) == (DateParts(2024, 4, 9),)  # the older dayfirst flag
    assert extract_dates("04/09/2024", "ymd") == (AmbiguousDate(2024, 4, 9),)
    assert extract_dates("14/09/2024", "ymd") == (DateParts(2024, 9, 14),)


def test_scoring_tells_the_scorer_the_field_name() -> None:
    item = Item(id="l/1", pack="l", prompt="q", answer_format="text",
                fields=[Field(name="tenancy_deposit", kind="amount", gold="GBP 1673.07"),
                        Field(name="monthly_rent", kind="amount", gold="GBP 950.00"),
                        Field(name="late_fee", kind="amount", gold=None, options={"field": "ignored"})])
    out = "1. The tenancy deposit is £1,673.07.\n2. The monthly rent is £950.00.\n3. No late fee is stated."
    scored = score_item(item, Generation(item_id="l/1", pack="l", prompt_hash=item.prompt_hash, output=out))
    assert {k: v.outcome for k, v in scored.fields.items()} == {
        "tenancy_deposit": "correct", "monthly_rent": "correct", "late_fee": "correct_absent"}


@pytest.mark.parametrize("answer, kept", [
    ("USD 38,750.00.\n\nThe stated value is USD 38,750.00.\n\nThe stated value is USD 38,7",
     "USD 38,750.00.\n\nThe stated value is USD 38,750.00."),
    ("The invoice is 10.10 EUR.\n\nThe invoice is 10.10 EUR.\n\nThe", "The invoice is 10.10 EUR.\n\nThe invoice is 10.10 EUR."),
    ("The total is EUR 5.00.", "The total is EUR 5.00."),  # complete: nothing cut
    ("The total is EUR 5.00. The tax is EUR 1", "The total is EUR 5.00. The tax is EUR 1"),  # a new sentence, not a repeat
    ("EUR 5", "EUR 5"),
])
def test_a_cut_repeat_is_no_new_value(answer: str, kept: str) -> None:
    from evalrun.values.text import drop_cut_repeat

    assert drop_cut_repeat(answer) == kept


DOCUMENT = ("Exporter: Kestrel Optics GmbH, EORI DE1234567890123\nDeclarant reference: KO-EXP-2024-0117\n"
            "Item 1: Optical measuring instruments, HS code 9031.49, country of origin DE\nNet mass 388,40 kg")


@pytest.mark.parametrize("answer, copied", [
    ("Exporter: KO-EXP-2024-0112-1\nItem 1: Optical measuring instruments, HS code 9031.49, country of origin DE\n"
     "  Net mass 3", True),  # garbled, but the document's own words
    ("Exporter: Kestrel Optics GmbH", False),  # too short to tell
    ("The amounts in this document are in the currency of the country of India.", False),  # words of its own
    ("The net mass is 388,40 kg according to the declaration.", False),
    # its own frame around copied words is an answer, however wrong
    ("The exporter reference is Optical measuring instruments, HS code 9031.49.", False),
])
def test_an_answer_of_the_documents_own_words(answer: str, copied: bool) -> None:
    from evalrun.values.text import mostly_copied

    assert mostly_copied(answer, DOCUMENT) is copied


def test_copied_words_count_only_in_the_documents_order() -> None:
    from evalrun.values.text import mostly_copied

    doc = "PURCHASE ORDER\nPO Number: PO-77412\n1200 Harbor Blvd, Suite 300, Oakland, CA 94607"
    assert mostly_copied("1200 Harbor Blvd, Suite 300, Oakland, CA 94607", doc)
    assert not mostly_copied("The purchase order number is 1200 Harbor Blvd, Suite 300, Oakland, NV 94607", doc)
    assert not mostly_copied("Oakland Harbor Suite Blvd 300 1200 CA", doc)  # the words, not the runs


@pytest.mark.parametrize("kind, answer, none", [
    ("date", "最位最佳最佳最佳最佳最佳最佳最佳", True),  # ideographs are words: babble, not a value
    ("amount", "五千円", False),  # three ideographs: a value-like answer
    ("id", "The confirmation number is 06-13-2024.", False),  # a date may be (a wrong) id
    ("amount", "The confirmation number is 06-13-2024.", True),  # but it is no amount
])
def test_states_no_value(kind: str, answer: str, none: bool) -> None:
    from evalrun.values.registry import field_type

    assert field_type(kind).states_no_value(answer) is none
