"""Table-driven spec for evals.scoring.fields.score_field.

Each row is (id, kind, gold, pred, expected outcome, expected sub-code, options),
written from the scoring rules in DESIGN.md "Field scoring" and the decisions
documented in src/evalrun/evals/scoring/fields.py, not from the implementation's output.
"""

from __future__ import annotations

from typing import Any

import pytest

from evalrun.evals.scoring import AMBIGUOUS, OUTCOMES, SUBCODES, score_field


def C(id_: str, kind: str, gold: Any, pred: Any, outcome: str, sub: str | None = None, **opts: Any):
    return pytest.param(kind, gold, pred, outcome, sub, opts, id=f"{kind}:{id_}")


AMOUNT = [
    # --- correct: separators in both conventions
    C("plain", "amount", "1234.50", "1234.50", "correct"),
    C("trailing-zero-equal", "amount", "14851.2", "14851.20", "correct"),
    C("en-thousands", "amount", "14851.20", "14,851.20", "correct"),
    C("de-thousands", "amount", "14851.20", "14.851,20", "correct"),
    C("fr-space", "amount", "14851.20", "14 851,20", "correct"),
    C("nbsp", "amount", "14851.20", "14\u00a0851,20", "correct"),
    C("narrow-nbsp", "amount", "14851.20", "14\u202f851,20", "correct"),
    C("apostrophe", "amount", "1234.50", "1'234.50", "correct"),
    C("comma-3-digits-is-thousands", "amount", "1234", "1,234", "correct"),
    C("dot-3-digits-is-thousands", "amount", "1234", "1.234", "correct"),
    C("decimal-option-dot", "amount", "1.234", "1.234", "correct", decimal="."),
    C("decimal-option-comma-applies-to-gold", "amount", "1.234", "1234", "correct", decimal=","),
    C("decimal-option-comma-pred", "amount", "1234", "1,234", "wrong_value", "scale_error", decimal=","),
    C("decimal-comma", "amount", "12.50", "12,5", "correct"),
    C("indian-grouping", "amount", "1234567", "12,34,567.00", "correct"),
    C("de-millions", "amount", "1234567.89", "1.234.567,89", "correct"),
    C("leading-dot", "amount", "0.50", ".5", "correct"),
    # --- currencies on either side
    C("dollar-before", "amount", "USD 1234.50", "$1,234.50", "correct"),
    C("euro-after", "amount", "EUR 1234.50", "1.234,50 €", "correct"),
    C("iso-before", "amount", "1234.50 EUR", "EUR 1,234.50", "correct"),
    C("iso-after", "amount", "EUR 1234.50", "1,234.50 EUR", "correct"),
    C("iso-glued", "amount", "EUR 1234.50", "EUR1,234.50", "correct"),
    C("only-pred-currency", "amount", "1234.50", "€1,234.50", "correct"),
    C("only-gold-currency", "amount", "EUR 1234.50", "1234.5", "correct"),
    C("pound", "amount", "GBP 99.99", "£99.99", "correct"),
    C("yen", "amount", "JPY 1500", "¥1,500", "correct"),
    C("yen-kanji-suffix", "amount", "JPY 1500", "1,500円", "correct"),
    C("real", "amount", "BRL 1234.50", "R$ 1.234,50", "correct"),
    C("us-dollar-prefix", "amount", "USD 1234.50", "US$1,234.50", "correct"),
    C("chf-apostrophe", "amount", "CHF 1234.50", "CHF 1'234.50", "correct"),
    C("euros-word", "amount", "EUR 20", "20 euros", "correct"),
    C("fullwidth-digits", "amount", "1234.50", "１，２３４.５０", "correct"),
    # --- negatives
    C("minus", "amount", "-1234.50", "-1,234.50", "correct"),
    C("unicode-minus", "amount", "-1234.50", "\u22121,234.50", "correct"),
    C("parentheses", "amount", "-1234.50", "(1,234.50)", "correct"),
    C("trailing-minus", "amount", "-1234.50", "1,234.50-", "correct"),
    C("parentheses-with-symbol", "amount", "-1234.50 USD", "($1,234.50)", "correct"),
    C("minus-before-symbol", "amount", "-1234.50 EUR", "-€1.234,50", "correct"),
    C("label-parentheses", "amount", "-1234.50", "Net result: (1,234.50)", "correct"),
    C("prose-parentheses-are-aside", "amount", "14851.20", "The total (EUR 14,851.20) is due.", "correct"),
    C("sentence-ending-parentheses", "amount", "-1234.50", "The net result is (1,234.50).", "correct"),
    C("restated-in-parentheses", "amount", "14851.20", "EUR 14,851.20 (14,851.20 EUR)", "correct"),
    # --- free text
    C("sentence", "amount", "14851.20", "The total amount due is EUR 14,851.20.", "correct"),
    C("sentence-repeat-same-value", "amount", "14851.20", "EUR 14,851.20 (i.e. 14851.20 EUR)", "correct"),
    C("date-in-sentence-masked", "amount", "5000", "On 14 March 2024 the invoice total was EUR 5,000.00.", "correct"),
    C("iso-date-in-sentence-masked", "amount", "1234.50", "Total as of 2024-03-14: 1,234.50", "correct"),
    C("invoice-id-not-a-number", "amount", "250", "Invoice INV-2024-001: total EUR 250.00", "correct"),
    C("multi-field-answer", "amount", "EUR 14851.20", "Invoice INV-2024-0042 dated 14 March 2024, total EUR 14,851.20.", "correct"),
    C("multi-field-answer-with-count", "amount", "EUR 14851.20", "Invoice INV-2024-0042 dated 14 March 2024: 3 items, EUR 14,851.20.", "wrong_value"),
    C("several-different-not-credited", "amount", "14851.20", "Net 12,480.00, VAT 2,371.20, total 14,851.20", "wrong_value"),
    C("digit-boundary-ambiguous", "amount", "1234567", "Invoice 12345678 total 1234567", "wrong_value"),
    C("same-value-two-currencies", "amount", "EUR 100", "USD 100 or EUR 100", "wrong_value"),
    C("digit-boundary-longer-number", "amount", "1234567", "ID 12345678", "wrong_value", "digit_inserted"),
    C("glued-to-letter-is-not-a-number", "amount", "1234567", "Account A1234567", "wrong_value", "unparseable"),
    # --- non-string JSON values
    C("json-int", "amount", "1234.00", 1234, "correct"),
    C("json-float", "amount", "14851.20", 14851.2, "correct"),
    C("json-singleton-list", "amount", "1234.50", ["1,234.50"], "correct"),
    C("json-list-two-values", "amount", "1234.50", ["1,234.50", "99.00"], "wrong_value"),
    C("json-bool", "amount", "1234.50", True, "wrong_value", "unparseable"),
    C("json-dict", "amount", "5", {"value": 5}, "wrong_value", "unparseable"),
    # --- wrong values with sub-codes
    C("currency-mismatch-codes", "amount", "EUR 1234.50", "USD 1,234.50", "wrong_value", "currency_mismatch"),
    C("currency-mismatch-symbol", "amount", "EUR 1234.50", "£1,234.50", "wrong_value", "currency_mismatch"),
    C("sign-flip-lost-minus", "amount", "-1234.50", "1,234.50", "wrong_value", "sign_flip"),
    C("sign-flip-parentheses", "amount", "1234.50", "(1,234.50)", "wrong_value", "sign_flip"),
    C("sign-flip-minus", "amount", "50.00", "-50.00", "wrong_value", "sign_flip"),
    C("scale-x10", "amount", "1234.50", "12,345.00", "wrong_value", "scale_error"),
    C("scale-decimal-shift", "amount", "14851.20", "148,512.00", "wrong_value", "scale_error"),
    C("scale-german-misread", "amount", "12345", "1.2345", "wrong_value", "scale_error"),
    C("rounding-to-integer", "amount", "14851.20", "14,851", "wrong_value", "rounding"),
    C("rounding-zero-cents", "amount", "14851.20", "14851.00", "wrong_value", "rounding"),
    C("rounding-one-decimal", "amount", "1234.56", "1234.6", "wrong_value", "rounding"),
    C("digit-dropped-cents-kept", "amount", "14851.20", "1485.20", "wrong_value", "digit_dropped"),
    C("digit-dropped-integer", "amount", "98765", "9865", "wrong_value", "digit_dropped"),
    C("digit-inserted", "amount", "4500", "45100", "wrong_value", "digit_inserted"),
    C("digit-changed", "amount", "14851.20", "14871.20", "wrong_value", "digit_changed"),
    C("digit-changed-leading", "amount", "500", "600", "wrong_value", "digit_changed"),
    C("digits-transposed", "amount", "14851.20", "14581.20", "wrong_value", "digits_transposed"),
    C("digits-transposed-integer", "amount", "1234", "1243", "wrong_value", "digits_transposed"),
    C("unparseable-words", "amount", "14000", "fourteen thousand", "wrong_value", "unparseable"),
    C("prose-without-value-is-dropped", "amount", "5.00", "see the attached invoice", "missing", None),
    C("unparseable-words", "amount", "5.00", "five euros", "wrong_value", "unparseable"),
    # --- absent
    C("missing-none", "amount", "1234.50", None, "missing"),
    C("missing-empty", "amount", "1234.50", "", "missing"),
    C("missing-whitespace", "amount", "1234.50", "  \n ", "missing"),
    C("missing-NA", "amount", "1234.50", "N/A", "missing"),
    C("missing-na-punct", "amount", "1234.50", "  n/a. ", "missing"),
    C("missing-none-word", "amount", "1234.50", "none", "missing"),
    C("missing-null", "amount", "1234.50", "NULL", "missing"),
    C("missing-unknown", "amount", "1234.50", "Unknown", "missing"),
    C("missing-not-found", "amount", "1234.50", "Not found.", "missing"),
    C("missing-not-available", "amount", "1234.50", "not available", "missing"),
    C("missing-dash", "amount", "1234.50", "-", "missing"),
    C("missing-em-dash", "amount", "1234.50", "\u2014", "missing"),
    C("missing-refusal-sentence", "amount", "1234.50", "Not found in the document", "missing"),
    C("decoy-both-absent", "amount", None, None, "correct_absent"),
    C("decoy-na", "amount", None, "N/A", "correct_absent"),
    C("decoy-value-given", "amount", None, "EUR 500.00", "hallucinated"),
    C("decoy-no-value-in-prose", "amount", None, "There is no discount in the document.", "correct_absent"),
    C("decoy-json-zero", "amount", None, 0, "hallucinated"),
]

NUMBER = [
    C("percent-pred", "number", "12.5", "12.5%", "correct"),
    C("percent-gold", "number", "12.5%", "12.5", "correct"),
    C("percent-space", "number", "12.5%", "12.5 %", "correct"),
    C("percent-decimal-comma", "number", "12.5", "12,5 %", "correct"),
    C("sentence", "number", "42", "The answer is 42.", "correct"),
    C("thousands", "number", "1,000,000", "1000000", "correct"),
    C("dots-thousands", "number", "1000000", "1.000.000", "correct"),
    C("decimal-comma", "number", "1.5", "1,5", "correct"),
    C("with-unit-word", "number", "3", "3 items", "correct"),
    C("dot-3-digits-is-decimal", "number", "1.234", "1.234", "correct"),
    C("dot-3-digits-vs-thousands", "number", "1234", "1.234", "wrong_value", "scale_error"),
    C("decimal-comma-option", "number", "1234", "1.234", "correct", decimal=","),
    C("currency-ignored", "number", "100", "EUR 100", "correct"),
    C("leading-dot", "number", "0.5", ".5", "correct"),
    C("date-masked", "number", "150", "As of 14 March 2024, 150 units were sold.", "correct"),
    C("year-is-a-candidate", "number", "150", "In 2023, 150 units were sold.", "wrong_value"),
    C("several-candidates", "number", "7", "Steps 3 and 7", "wrong_value"),
    C("range-is-not-a-number", "number", "5", "5-10", "wrong_value", "unparseable"),
    C("percent-as-fraction", "number", "12.5%", "0.125", "wrong_value", "scale_error"),
    C("scale", "number", "250", "25", "wrong_value", "scale_error"),
    C("percent-rounded", "number", "12.5%", "12%", "wrong_value", "rounding"),
    C("sign-flip", "number", "42", "-42", "wrong_value", "sign_flip"),
    C("digit-changed", "number", "1987", "1988", "wrong_value", "digit_changed"),
    C("digits-transposed", "number", "2718", "2178", "wrong_value", "digits_transposed"),
    C("digit-dropped", "number", "31415", "3145", "wrong_value", "digit_dropped"),
    C("unparseable", "number", "7", "seven", "wrong_value", "unparseable"),
    C("missing", "number", "7", "n/a", "missing"),
    C("decoy", "number", None, "3", "hallucinated"),
]

DATE = [
    C("iso", "date", "2024-03-14", "2024-03-14", "correct"),
    C("written-dmy", "date", "2024-03-14", "14 March 2024", "correct"),
    C("written-mdy", "date", "2024-03-14", "March 14, 2024", "correct"),
    C("abbrev-ordinal", "date", "2024-03-14", "Mar. 14th 2024", "correct"),
    C("slash-dmy", "date", "2024-03-14", "14/03/2024", "correct"),
    C("dot-dmy", "date", "2024-03-14", "14.03.2024", "correct"),
    C("cjk", "date", "2024-03-14", "2024年3月14日", "correct"),
    C("cjk-spaced", "date", "2024-03-14", "2024 年 3 月 14 日", "correct"),
    C("ymd-slash", "date", "2024-03-14", "2024/03/14", "correct"),
    C("ordinal-of", "date", "2024-03-14", "the 14th of March, 2024", "correct"),
    C("weekday", "date", "2024-03-14", "Thursday, March 14, 2024", "correct"),
    C("dash-abbrev", "date", "2024-03-14", "14-Mar-2024", "correct"),
    C("german", "date", "2024-03-14", "14. März 2024", "correct"),
    C("compact", "date", "2024-03-14", "20240314", "correct"),
    C("iso-datetime", "date", "2024-03-14", "2024-03-14T09:30:00Z", "correct"),
    C("ambiguous-dayfirst-default", "date", "2024-04-03", "03/04/2024", "correct"),
    C("ambiguous-monthfirst-option", "date", "2024-03-04", "03/04/2024", "correct", dayfirst=False),
    C("unambiguous-monthfirst", "date", "2024-03-14", "03/14/2024", "correct"),
    C("unambiguous-dayfirst-with-option", "date", "2024-03-14", "14/03/2024", "correct", dayfirst=False),
    C("two-digit-year", "date", "2024-03-14", "14/03/24", "correct"),
    C("month-precision", "date", "2024-03", "March 2024", "correct"),
    C("month-precision-written-gold", "date", "March 2024", "2024-03", "correct"),
    C("gold-precision-accepts-day", "date", "2024-03", "14 March 2024", "correct"),
    C("sentence", "date", "2024-03-14", "The invoice is dated 14 March 2024.", "correct"),
    C("sentence-same-date-twice", "date", "2024-03-14", "14 March 2024 (2024-03-14)", "correct"),
    C("month-then-day-consistent", "date", "2024-03-14", "In March 2024, on 14 March 2024", "correct"),
    C("multi-field-answer", "date", "2024-03-14", "Invoice INV-2024-0042 dated 14 March 2024: 3 items, EUR 14,851.20.", "correct"),
    C("year-month-day-written", "date", "2024-03-14", "2024 March 14", "correct"),
    C("two-dates-not-credited", "date", "2024-03-14", "Issued 14 March 2024, due 13 April 2024", "wrong_value"),
    C("no-day-not-filled", "date", "2024-03-14", "March 2024", "wrong_value"),
    C("no-year-not-filled", "date", "2024-03-14", "March 14", "wrong_value"),
    C("no-year-dm-written", "date", "2024-03-14", "14 March", "wrong_value"),
    C("day-month-swap-iso", "date", "2024-03-04", "2024-04-03", "wrong_value", "day_month_swap"),
    C("day-month-swap-written", "date", "2024-03-04", "April 3, 2024", "wrong_value", "day_month_swap"),
    C("off-by-one", "date", "2024-03-14", "15 March 2024", "wrong_value", "off_by_one_day"),
    C("off-by-one-leap", "date", "2024-03-01", "2024-02-29", "wrong_value", "off_by_one_day"),
    C("off-by-one-new-year", "date", "2023-12-31", "2024-01-01", "wrong_value", "off_by_one_day"),
    C("wrong-year", "date", "2024-03-14", "14 March 2023", "wrong_value", "wrong_year"),
    C("wrong-year-month-precision", "date", "2024-03", "March 2023", "wrong_value", "wrong_year"),
    C("other-date", "date", "2024-03-14", "2024-07-02", "wrong_value"),
    C("unparseable-relative", "date", "2024-03-14", "next Tuesday", "wrong_value", "unparseable"),
    C("unparseable-word", "date", "2024-03-14", "soon", "wrong_value", "unparseable"),
    C("unparseable-day-month-only-numeric", "date", "2024-03-14", "14/03", "wrong_value", "unparseable"),
    C("invalid-calendar-date", "date", "2024-02-29", "31 February 2024", "wrong_value", "unparseable"),
    C("missing", "date", "2024-03-14", "N/A", "missing"),
    C("decoy-hallucinated", "date", None, "2024-03-14", "hallucinated"),
    C("decoy-no-date-in-prose", "date", None, "No due date is given.", "correct_absent"),
]

ID = [
    C("exact", "id", "INV-2024-0042", "INV-2024-0042", "correct"),
    C("slashes", "id", "INV-2024-0042", "INV/2024/0042", "correct"),
    C("spaces-lowercase", "id", "INV-2024-0042", "inv 2024 0042", "correct"),
    C("underscore-dot", "id", "INV-2024-0042", "INV_2024.0042", "correct"),
    C("sentence", "id", "INV-2024-0042", "The invoice number is INV-2024-0042.", "correct"),
    C("sentence-spaced-id", "id", "INV-2024-0042", "The invoice number is INV 2024 0042.", "correct"),
    C("hash-prefix", "id", "12345", "#12345", "correct"),
    C("label-word", "id", "12345678", "ID: 12345678", "correct"),
    C("json-int", "id", "12345", 12345, "correct"),
    C("one-char-substitution", "id", "INV-2024-0042", "INV-2024-0043", "wrong_value", "one_char_edit"),
    C("one-char-deletion", "id", "INV-2024-0042", "INV-2024-042", "wrong_value", "one_char_edit"),
    C("one-char-insertion", "id", "INV-2024-0042", "INV-2024-00042", "wrong_value", "one_char_edit"),
    C("digit-boundary-no-credit", "id", "1234567", "12345678", "wrong_value", "one_char_edit"),
    C("transposition", "id", "INV-2024-0042", "INV-2024-0024", "wrong_value", "transposition"),
    C("transposition-letters", "id", "AB12CD", "BA12CD", "wrong_value", "transposition"),
    C("suffix-only", "id", "INV-2024-0042", "2024-0042", "wrong_value", "prefix_or_suffix"),
    C("prefix-only", "id", "INV-2024-0042", "INV-2024", "wrong_value", "prefix_or_suffix"),
    C("other-id", "id", "INV-2024-0042", "XYZ-9999-1111", "wrong_value"),
    C("multi-field-answer", "id", "INV-2024-0042", "Invoice INV-2024-0042 dated 14 March 2024: 3 items, EUR 14,851.20.", "correct"),
    C("id-with-embedded-date", "id", "INV-2024-03-14-7", "Ref INV-2024-03-14-7 issued 2024-03-14.", "correct"),
    C("two-ids-not-credited", "id", "INV-2024-0042", "Invoice INV-2024-0042 replaces INV-2024-0041", "wrong_value"),
    C("missing", "id", "INV-2024-0042", "unknown", "missing"),
    C("decoy-hallucinated", "id", None, "PO-123", "hallucinated"),
    C("decoy-no-id-in-prose", "id", None, "There is no purchase order number.", "correct_absent"),
]

TEXT = [
    C("case-punct", "text", "Acme Corp.", "ACME CORP", "correct"),
    C("whitespace", "text", "Acme Corp", "Acme   Corp", "correct"),
    C("nfkc-fullwidth", "text", "Acme Corp", "Ａｃｍｅ Corp", "correct"),
    C("apostrophe-ampersand", "text", "O'Brien & Sons", "OBrien & Sons", "correct"),
    C("hyphen", "text", "Coca-Cola", "Coca Cola", "correct"),
    C("near-match", "text", "Northwind Traders Limited", "Northwind Trader Limited", "near_match"),
    C("near-match-truncated", "text", "International Business Machines", "International Business Machine", "near_match", "truncated"),
    C("partial-truncated", "text", "Acme Corporation", "Acme Corp", "partial", "truncated"),
    C("partial", "text", "Blue River Bank", "Blue River Trust", "partial"),
    C("word-order-wrong", "text", "Acme Corporation", "Corporation Acme", "wrong_value", "word_order"),
    C("word-order-names", "text", "Smith John", "John Smith", "wrong_value", "word_order"),
    C("word-order-partial", "text", "Bank of New York Mellon", "Bank of New Mellon York", "partial", "word_order"),
    C("word-order-near", "text", "alpha beta gamma delta epsilon zeta eta theta x y", "alpha beta gamma delta epsilon zeta eta theta y x", "near_match", "word_order"),
    C("truncated-wrong", "text", "Acme Corporation International", "Acme", "wrong_value", "truncated"),
    C("different", "text", "Acme", "Globex", "wrong_value"),
    C("missing", "text", "Acme", "N/A", "missing"),
    C("decoy-hallucinated", "text", None, "Acme", "hallucinated"),
    C("decoy-none", "text", None, "none", "correct_absent"),
]

_ENUM = {"allowed": ["paid", "unpaid", "overdue"], "synonyms": {"settled": "paid", "open": "unpaid"}}
ENUM = [
    C("equal-case", "enum", "paid", "Paid", "correct", **_ENUM),
    C("synonym", "enum", "paid", "settled", "correct", **_ENUM),
    C("synonym-case", "enum", "paid", "SETTLED", "correct", **_ENUM),
    C("synonym-gold", "enum", "open", "unpaid", "correct", **_ENUM),
    C("sentence", "enum", "paid", "The invoice has been paid.", "correct", **_ENUM),
    C("invalid", "enum", "paid", "pending", "wrong_value", "invalid_value", **_ENUM),
    C("invalid-word", "enum", "paid", "maybe", "wrong_value", "invalid_value", **_ENUM),
    C("negated-not-credited", "enum", "paid", "The invoice is not paid.", "wrong_value", "invalid_value", **_ENUM),
    C("other-allowed", "enum", "paid", "unpaid", "wrong_value", None, **_ENUM),
    C("two-values-not-credited", "enum", "paid", "paid or overdue", "wrong_value", None, **_ENUM),
    C("none-is-a-value", "enum", "none", "None", "correct", allowed=["none", "partial", "full"]),
    C("missing", "enum", "paid", "N/A", "missing", **_ENUM),
    C("decoy-hallucinated", "enum", None, "paid", "hallucinated", **_ENUM),
    C("decoy-no-value", "enum", None, "The document doesn't say.", "correct_absent", **_ENUM),
    C("no-allowed-equal", "enum", "EUR", "eur", "correct"),
    C("no-allowed-different", "enum", "credit", "debit", "wrong_value"),
]

CASES = AMOUNT + NUMBER + DATE + ID + TEXT + ENUM


@pytest.mark.parametrize(("kind", "gold", "pred", "outcome", "sub", "opts"), CASES)
def test_table(kind: str, gold: Any, pred: Any, outcome: str, sub: str | None, opts: dict[str, Any]) -> None:
    fs = score_field(kind, gold, pred, **opts)
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


def test_table_size_and_coverage() -> None:
    from tests.evals.test_fields_review import CASES as REVIEW_CASES

    assert len(CASES) >= 150
    seen: dict[str, int] = {}
    for p in CASES + REVIEW_CASES:
        kind, _, _, _, sub, _ = p.values
        if sub:
            seen[f"{kind}:{sub}"] = seen.get(f"{kind}:{sub}", 0) + 1
    numeric = {s for s in SUBCODES["amount"]}
    for s in numeric:
        assert seen.get(f"amount:{s}", 0) + seen.get(f"number:{s}", 0) >= 2, s
    for kind in ("date", "id", "text", "enum"):
        for s in SUBCODES[kind]:
            assert seen.get(f"{kind}:{s}", 0) >= 2, (kind, s)


def test_ambiguous_detail() -> None:
    fs = score_field("amount", "14851.20", "Net 12,480.00, VAT 2,371.20, total 14,851.20")
    assert fs.outcome == "wrong_value" and fs.detail == AMBIGUOUS
    assert fs.pred_norm == "12480.00 | 2371.20 | 14851.20"


def test_norm_strings() -> None:
    fs = score_field("amount", "-1,234.50 EUR", "(€1.234,50)")
    assert (fs.outcome, fs.gold_norm, fs.pred_norm) == ("correct", "-1234.50 EUR", "-1234.50 EUR")
    fs = score_field("date", "March 2024", "14 March 2024")
    assert (fs.gold_norm, fs.pred_norm) == ("2024-03", "2024-03-14")
    fs = score_field("date", "2024-03-14", "March 14")
    assert fs.pred_norm == "--03-14" and fs.detail and "year" in fs.detail
    fs = score_field("id", "inv-2024/0042", "x")
    assert fs.gold_norm == "INV20240042"
    fs = score_field("text", "  Acme,   CORP. ", "acme corp")
    assert (fs.gold_norm, fs.pred_norm) == ("acme corp", "acme corp")
    fs = score_field("amount", "1234.50", None)
    assert (fs.outcome, fs.gold_norm, fs.pred_norm) == ("missing", "1234.50", None)


# ---------------------------------------------------------------- library edge cases
# The traps PRIOR-ART.md lists for price-parser, babel, dateparser and dateutil.


def test_minus_is_kept() -> None:
    assert score_field("amount", "-1234.50", "-1,234.50").outcome == "correct"
    assert score_field("amount", "1234.50", "-1,234.50").subcode == "sign_flip"


def test_parentheses_are_negative() -> None:
    fs = score_field("amount", "-1234.50", "(1,234.50)")
    assert fs.outcome == "correct" and fs.pred_norm == "-1234.50"


def test_percent_keeps_decimals() -> None:
    fs = score_field("number", "12.5", "12.5%")
    assert fs.outcome == "correct" and fs.pred_norm == "12.5"
    assert score_field("number", "12", "12.5%").outcome == "wrong_value"


def test_german_thousands_not_decimal() -> None:
    fs = score_field("amount", "1234.50", "1.234,50")
    assert fs.outcome == "correct" and fs.pred_norm == "1234.50"
    assert score_field("amount", "1.2345", "1.234,50").outcome == "wrong_value"


def test_date_without_year_is_not_completed() -> None:
    import datetime

    today = datetime.date.today()
    gold = today.isoformat()
    for pred in (today.strftime("%B %d").replace(" 0", " "), f"{today.day} {today.strftime('%B')}"):
        fs = score_field("date", gold, pred)
        assert fs.outcome == "wrong_value", (pred, fs)
        assert fs.pred_norm and fs.pred_norm.startswith("--"), fs
    # a month-precision gold is not completed with today's day either
    fs = score_field("date", today.strftime("%Y-%m"), today.strftime("%B %Y"))
    assert fs.outcome == "correct" and fs.pred_norm == today.strftime("%Y-%m")


def test_iso_date_is_never_day_first() -> None:
    assert score_field("date", "2024-03-04", "2024-03-04", dayfirst=True).outcome == "correct"


def test_outcomes_are_the_documented_strings() -> None:
    assert set(OUTCOMES) == {"correct", "near_match", "partial", "wrong_value", "missing", "hallucinated", "correct_absent"}


def test_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        score_field("money", "1", "1")


@pytest.mark.parametrize(
    "pred, subcode",
    [
        ("EUR 14,85.20", "digit_dropped"),     # a damaged thousands group is still one amount
        ("14.85,20 EUR", "digit_dropped"),
        ("EUR 148,851.20", "digit_inserted"),
        ("The total amount due is EUR 14,815.20.", "digits_transposed"),
    ],
)
def test_damaged_amounts_from_lossy_candidates_get_digit_subcodes(pred: str, subcode: str) -> None:
    score = score_field("amount", "EUR 14851.20", pred)
    assert (score.outcome, score.subcode) == ("wrong_value", subcode)


@pytest.mark.parametrize(
    "gold, pred, outcome",
    [
        ("Copperfield Analytics SARL", "The customer name is Copperfield Analytics SARL.", "correct"),
        ("Harlow Partners", "The auditor is Harlow Partner.", "near_match"),
        ("Harlow Partners", "The auditor is Harlow Partnership Ltd.", "partial"),
        ("Harlow Partners", "The auditor is Eastgate Audit.", "wrong_value"),
    ],
)
def test_text_values_inside_sentence_answers(gold: str, pred: str, outcome: str) -> None:
    assert score_field("text", gold, pred).outcome == outcome


def test_a_different_number_is_not_called_a_digit_slip() -> None:
    score = score_field("amount", "CHF 1451.53", "2019")
    assert (score.outcome, score.subcode) == ("wrong_value", None)
    assert score_field("amount", "CHF 1451.53", "1451.67 CHF").subcode == "digit_changed"
