"""Degenerate repetition is no answer; a value restated is still one (issue 27's audit set:
looping answers a reviewer reads as `missing` were scored `wrong_value`)."""

from __future__ import annotations

import pytest

from evalrun.contract.types import CONTEXT_SEPARATOR
from evalrun.evals.scoring import LOOPING, score_field
from evalrun.values.loops import mask_loops

# (kind, gold, answer): answers from the audit set's lossy candidates, each a loop
LOOPS_ARE_NO_ANSWER = [
    ("amount", "EUR 4080.12", "Suma 2023-2024, 2023-2024, 2023-2024, 2023-2024, 2"),
    ("percent", "21", "Suma 2023-2024, 2023-2024, 2023-2024, 2023-2024, 2"),
    ("number", "240", "Suma 2023-2024, 2023-2024, 2023-2024, 2023-2024, 2"),
    ("amount", "EUR 1399.91", "12 x 12 = 144\n12 x 12 = 144\n12 x 12 = 144\n12 x 12 = 144\n"),
    ("number", "400", "1. 1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1"),
    ("percent", "21", "Suminismros 2023-2023-2023-2023-2023-2023-2023-2023-202"),
    ("amount", "EUR 1399.91", "1. 2022-01-22 2022-01-22 2022-01-22 2022-01-22 2"),
    # a loop never starts inside a number, and a loop of "+ 20" goes on with the sum its first term opens
    ("amount", "SEK 597360.00", "Total excluding VAT = 30 + 20 + 20 + 20 + 20 + 20 + 20 + 20 + 20 + 20 + 20 +"),
    ("amount", "SEK 30.00", "Total excluding VAT = 30 + 20 + 20 + 20 + 20 + 20 + 20 + 20 + 20 + 20 + 20 +"),
    # a loop glued to the token before it repeats a piece of that token (a tax id's range)
    ("number", "240", "Suminismros\nS.L. - CIF 2100-2400, 2400, 2400, 2400, 2400, "),
]


@pytest.mark.parametrize("kind,gold,answer", LOOPS_ARE_NO_ANSWER)
def test_a_loop_states_no_value(kind: str, gold: str, answer: str) -> None:
    s = score_field(kind, gold, answer)
    assert (s.outcome, s.detail) == ("missing", LOOPING)


@pytest.mark.parametrize("answer", ["カラララララララララララララララララララララララ", "トコルトトコルトトコルトトコルト",
                                    "カトコルトトコルトトコルトトコルトトコルトトトト"])  # what a loop leaves is kana
def test_a_run_of_letters_on_an_absent_field_is_missing_not_a_hallucinated_id(answer: str) -> None:
    question = "What is the customer's order number (注文番号)? Answer with the number only."
    assert score_field("id", None, answer, context="請求書" + CONTEXT_SEPARATOR + question).outcome == "missing"


def test_a_loop_on_a_list_marker_restates_no_value() -> None:
    s = score_field("number", "400", "1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. ")
    assert (s.outcome, s.detail) == ("missing", LOOPING)


@pytest.mark.parametrize("kind,gold,answer,outcome", [
    # one value repeated is that value stated, however often
    ("amount", "EUR 5.00", "EUR 5 EUR 5 EUR 5 EUR 5 EUR 5", "correct"),
    ("amount", "EUR 5.00", "The total is EUR 5.\n\nThe total is EUR 5.\n\nThe total is EUR 5.\n\nThe total is EUR 5.",
     "correct"),
    ("amount", "EUR 6.00", "EUR 5 EUR 5 EUR 5 EUR 5 EUR 5", "wrong_value"),
    # a number's own groups are no loop
    ("number", "1000000000000", "1,000,000,000,000", "correct"),
    ("amount", "INR 12233233", "INR 1,22,33,233", "correct"),
    # a digit run is one (wrong) number, not babble
    ("amount", "AED 155746.50", "The total is 100000000000000000000000000000 AED", "wrong_value"),
    # a value repeated on its own is still that value, and a sum's result is still read
    ("number", "240", "The count is 2400, 2400, 2400, 2400, 2400", "wrong_value"),
    ("amount", "SEK 110.00", "Total = 30 + 20 + 20 + 20 + 20 = 110", "correct"),
    # a value outside the loop is still read
    ("date", "2024-05-05", "The issue date is 2024-05-20 12:12:53.233.233.233.233.233.233", "wrong_value"),
])
def test_what_a_loop_does_not_hide(kind: str, gold: str, answer: str, outcome: str) -> None:
    assert score_field(kind, gold, answer).outcome == outcome


def test_masking_keeps_spans_and_takes_the_cut_copy() -> None:
    text = "Suma 2023-2024, 2023-2024, 2023-2024, 2023-2024, 2"
    masked, units = mask_loops(text)
    assert len(masked) == len(text) and masked.strip() == "Suma" and units == [" 2023-2024,"]


def test_a_loop_starts_where_a_number_does() -> None:
    masked, units = mask_loops("Total = 30 + 20 + 20 + 20 + 20 +")
    assert masked.strip() == "Total =" and units == [" + 20"]
    masked, units = mask_loops("CIF 2100-2400, 2400, 2400, 2400, 2400, ")
    assert masked.strip() == "CIF" and units == ["2100-2400, "]


@pytest.mark.parametrize("gold,answer,outcome", [
    # an id is written in Latin letters and digits: kana or ideographs alone are none
    (None, "カトト", "missing"),
    (None, "トコルト", "missing"),
    # one beside Japanese words is still read, and a slip in it is still one
    ("PO-7781", "注文番号: PO-7781", "correct"),
    ("PO-7781", "注文番号: PO-7782", "wrong_value"),
    (None, "注文番号: PO-7781", "hallucinated"),
    (None, "PO-7781", "hallucinated"),
])
def test_an_id_needs_latin_letters_or_digits(gold: str | None, answer: str, outcome: str) -> None:
    question = "What is the customer's order number (注文番号)? Answer with the number only."
    s = score_field("id", gold, answer, context="請求書" + CONTEXT_SEPARATOR + question)
    assert s.outcome == outcome, s


def test_two_digits_after_dots_loop_and_lakh_groups_do_not() -> None:
    """".22.22.22.22" after a time is a loop, not digits of an IBAN to check; lakh groups of
    two digits after commas are a number's own."""
    s = score_field("checked_id", "NL91ABNA0417164300", "The supplier's IBAN is 2024-04-22 12:32:53.22.22.22.22.22.22.22.",
                    scheme="iban")
    assert (s.outcome, s.subcode) == ("wrong_value", None), s
    assert score_field("amount", "INR 1000000000000", "INR 10,00,00,00,00,000").outcome == "correct"
    assert score_field("amount", "INR 1000000000000", "INR 10,00,00,00,00,001").outcome == "wrong_value"
