"""Unit tests of the typed value parsers in evalrun.values, one kind at a time.

The scorer's behaviour as a whole is pinned by tests/evals/test_fields_table.py;
these pin the pieces it and the packs share, so a parser change shows here first.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from evalrun.values import (
    AmountCand,
    DateParts,
    coerce,
    currency_code,
    extract_amounts,
    extract_dates,
    find_enum_values,
    fmt_amount,
    fmt_date,
    gold_value,
    id_candidates,
    interpret_number,
    is_absent,
    is_absent_value,
    mask_dates,
    norm_id,
    norm_text,
)
from evalrun.values.enums import enum_lookup


@pytest.mark.parametrize("num, decimal, expected", [
    ("1,234.50", None, "1234.50"),
    ("1.234,50", None, "1234.50"),
    ("1 234,50", None, "1234.50"),
    ("1'234.50", None, "1234.50"),
    ("12,34,567.00", None, "1234567.00"),
    ("1,234", None, "1234"),
    ("1.234", None, "1.234"),
    ("1.234", "auto", "1234"),
    ("1,234", ",", "1.234"),
    ("0,125", "auto", "0.125"),
    ("1.234.567", None, "1234567"),
])
def test_interpret_number_decides_the_decimal_separator(num: str, decimal: str | None, expected: str) -> None:
    assert interpret_number(num, decimal) == Decimal(expected)


def test_extract_amounts_reads_currency_sign_and_accounting_negatives() -> None:
    assert extract_amounts("Total: EUR 14.851,20") == (AmountCand(Decimal("14851.20"), "EUR"),)
    assert extract_amounts("$1,234.50") == (AmountCand(Decimal("1234.50"), "$"),)  # resolved against the gold
    assert extract_amounts("US$1,234.50") == (AmountCand(Decimal("1234.50"), "USD"),)
    assert extract_amounts("(1,234.50)") == (AmountCand(Decimal("-1234.50"), None),)
    assert extract_amounts("The total (EUR 5) is due") == (AmountCand(Decimal("5"), "EUR"),)
    assert extract_amounts("1234.50-")[0].value == Decimal("-1234.50")


def test_extract_amounts_skips_dates_ids_and_ranges() -> None:
    assert extract_amounts("14 March 2024") == ()
    assert extract_amounts("INV-2024-001") == ()
    assert extract_amounts("A123") == ()
    assert extract_amounts("5-10") == ()
    assert extract_amounts("10:30") == ()


def test_currency_code_and_formatting() -> None:
    assert currency_code("€") == "EUR" and currency_code("usd") == "USD" and currency_code("XYZ") is None
    assert currency_code(None) is None
    assert fmt_amount(Decimal("12.50"), "EUR") == "12.50 EUR" and fmt_amount(Decimal("-3")) == "-3"


@pytest.mark.parametrize("text, dayfirst, expected", [
    ("2024-03-14", True, (2024, 3, 14)),
    ("14/03/2024", True, (2024, 3, 14)),
    ("03/04/2024", True, (2024, 4, 3)),
    ("03/04/2024", False, (2024, 3, 4)),
    ("14 March 2024", True, (2024, 3, 14)),
    ("March 14, 2024", True, (2024, 3, 14)),
    ("14. März 2024", True, (2024, 3, 14)),
    ("2024年3月14日", True, (2024, 3, 14)),
    ("March 2024", True, (2024, 3, None)),
    ("March 14", True, (None, 3, 14)),
    ("20240314", True, (2024, 3, 14)),
    ("2024", True, (2024, None, None)),
    ("14.03.24", True, (2024, 3, 14)),
])
def test_extract_dates(text: str, dayfirst: bool, expected: tuple[int | None, ...]) -> None:
    assert extract_dates(text, dayfirst) == (DateParts(*expected),)


def test_dates_never_invalid_or_guessed() -> None:
    assert extract_dates("31 February 2024") == ()
    assert extract_dates("EUR 12 may apply") == ()
    assert extract_dates("in 2024 and 20240314") == ()  # compact and bare years only as a whole value
    assert fmt_date(DateParts(2024, 3, None)) == "2024-03" and fmt_date(DateParts(None, 3, 14)) == "--03-14"
    assert mask_dates("due 14 March 2024.") == "due " + " " * len("14 March 2024") + "."


def test_ids_normalise_and_come_out_of_prose() -> None:
    assert norm_id(" inv-2024/0042. ") == "INV20240042"
    assert id_candidates("INV-2024-0042") == (False, ("INV20240042",))
    assert id_candidates("ID: DE 1234 5678") == (False, ("DE12345678",))
    free, cands = id_candidates("The invoice number is INV 2024 0042 dated 14 March 2024.")
    assert free and cands == ("INV20240042",)
    assert id_candidates("The order has 3 items.") == (True, ())


def test_text_and_absence() -> None:
    assert norm_text("  Don't  STOP—now! ") == "dont stop now"
    assert norm_text("ＡＢＣ") == "abc"
    for marker in ("N/A", "none.", "  Not found ", "-", "", "null"):
        assert is_absent(marker), marker
    assert not is_absent("0") and not is_absent("Not found in the document.")
    assert is_absent("Not found in the document.", prefix_rule=True)


def test_coerce_json_values() -> None:
    assert coerce(None) == (None, None)
    assert coerce(1.10) == ("1.1", None) and coerce(True) == ("true", None)
    assert coerce(["x"]) == ("x", None) and coerce([]) == (None, None)
    assert coerce([1, 2]) == ("1; 2", None)
    assert coerce({"a": 1}) == ('{"a": 1}', "nonscalar")
    assert coerce(10 ** 5000)[0] == "1" + "0" * 5000


def test_enum_values_are_whole_words_and_not_negated() -> None:
    opts = {"allowed": ["paid", "unpaid"], "synonyms": {"settled": "paid"}}
    lookup, allowed = enum_lookup(opts["allowed"], opts["synonyms"])
    assert allowed == {"paid", "unpaid"} and lookup["settled"] == "paid"
    assert find_enum_values("the invoice is not paid it is unpaid", lookup) == ["unpaid"]
    assert find_enum_values("it was settled", lookup) == ["paid"]


def test_gold_value_reads_one_typed_value_or_none() -> None:
    assert gold_value("amount", "1.234,50 EUR", {}) == AmountCand(Decimal("1234.50"), "EUR")
    assert gold_value("number", "12.5%", {}) == AmountCand(Decimal("12.5"), None)
    assert gold_value("date", "2024-03-14", {}) == DateParts(2024, 3, 14)
    assert gold_value("id", "inv-0042", {}) == "INV0042"
    assert gold_value("text", "Acme GmbH", {}) == "acme gmbh"
    assert gold_value("enum", "Settled", {"allowed": ["paid"], "synonyms": {"settled": "paid"}}) == "paid"
    assert gold_value("amount", "five euros", {}) is None
    assert gold_value("amount", "5 or 6", {}) is None  # two values are no single gold
    assert gold_value("date", "soon", {}) is None
    long = "x" * 300 + " 12.50"  # past the cache: the same reading
    assert gold_value("amount", long, {}) == AmountCand(Decimal("12.50"), None)


def test_is_absent_value_by_kind() -> None:
    assert is_absent_value("amount", "Not found in the document.", {})
    assert not is_absent_value("text", "Not found in the document.", {})
    assert is_absent_value("enum", "none", {"allowed": ["paid"]})
    assert not is_absent_value("enum", "none", {"allowed": ["paid", "none"]})


# a span of time is no sum of money: the amount type does not read "30 days" or "36日"; a plain
# number (a tenure in months) still does
@pytest.mark.parametrize("kind, gold, answer, outcome", [
    ("amount", "EUR 500.00", "EUR 500 payable within 30 days", "correct"),
    ("amount", "EUR 58.80", "12 Monate x 4,90 € = 58,80 €", "wrong_value"),  # still two sums of money
    ("amount", "JPY 1800000", "180万円、支払期日は30日以内", "correct"),
    ("amount", "AED 155746.50", "The sum of the quotation is: 30 days + 30 days + 30 days + 30 days + 30 days + ",
     "missing"),
    ("amount", "EUR 30.00", "The fee is 30 days.", "wrong_value"),  # another shape given: never its 30
    ("amount", "EUR 30.00", "The fee is EUR 30 for 30 days.", "correct"),
    ("number", "36", "The tenure is 36 months.", "correct"),
    ("number", "30", "Payable within 30 Tage.", "correct"),
])
def test_a_span_of_time_is_no_amount(kind: str, gold: str, answer: str, outcome: str) -> None:
    from evalrun.evals.scoring import score_field

    s = score_field(kind, gold, answer, field="value")
    assert s.outcome == outcome, s
