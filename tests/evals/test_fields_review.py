"""The classes a careful human reviewer scores differently from a naive scorer
(one user's hand-scored field results): list answers, values restated in
another unit, refusals, shared currency symbols, enum synonyms inside longer
synonyms, implausible digit slips, three-decimal currencies, rounding versus
truncation, and the date order. Each rule has a case that earns it and one that
must not; rows are (id, kind, gold, pred, outcome, sub-code, options)."""

from __future__ import annotations

from typing import Any

import pytest

from evalrun.evals.scoring import AMBIGUOUS, NAMED, REFUSAL, score_field
from evalrun.values import gold_value
from evalrun.values.dates import DateParts


def C(id_: str, kind: str, gold: Any, pred: Any, outcome: str, sub: str | None = None, **opts: Any):
    return pytest.param(kind, gold, pred, outcome, sub, opts, id=f"{kind}:{id_}")


LEASE = "1. The tenancy deposit is £1,673.07.\n2. The monthly rent is £950.00."
LISTS = [
    # list markers are not values
    C("numbered-date-answer-no-candidate-1", "amount", "24", "1. 2023-04-27 ...", "wrong_value", "unparseable"),
    C("numbered-answer-value", "amount", "24", "1. 2023-04-27: amount due 24", "correct"),
    C("paren-marker", "amount", "24", "1) EUR 24.00", "correct"),
    C("parenthesised-marker", "amount", "24", "(1) EUR 24.00", "correct"),
    C("letter-marker", "number", "24", "a) 24 items", "correct"),
    C("bullet-dash-is-not-minus", "amount", "24", "- EUR 24.00", "correct"),
    C("glued-dash-is-minus", "amount", "24", "-EUR 24.00", "wrong_value", "sign_flip"),
    C("bullet-star", "number", "24", "* 24", "correct"),
    C("bullet-dot", "number", "24", "\u2022 24", "correct"),
    C("numbered-list-second-item", "number", "7", "1. Seven units\n2. 7", "correct"),
    C("a-lone-24-dot-is-a-value", "amount", "24", "24. It is due on delivery.", "correct"),
    C("a-lone-1-dot-is-a-value", "number", "1", "1.", "correct"),
    C("numbered-id", "id", "INV-2024-0042", "1. INV-2024-0042", "correct"),
    C("numbered-id-list", "id", "PO-7781", "1. Invoice number: INV-2024-0042\n2. PO number: PO-7781", "correct", field="po_number"),
    # the one clause naming the field
    C("list-named-clause", "amount", "GBP 1673.07", LEASE, "correct", field="tenancy_deposit"),
    C("list-distractor-field", "amount", "GBP 950.00", LEASE, "correct", field="monthly_rent"),
    C("list-without-field-name", "amount", "GBP 1673.07", LEASE, "wrong_value"),
    C("list-no-clause-names-field", "amount", None, LEASE, "hallucinated", field="late_fee"),
    C("list-no-clause-names-field-gold", "amount", "GBP 50", LEASE, "wrong_value", field="late_fee"),
    C("list-named-clause-wrong-value", "amount", "GBP 1673.07", "1. Deposit: £1,637.07\n2. Rent: £950",
      "wrong_value", "digits_transposed", field="deposit"),
    C("subtotal-does-not-name-total", "amount", "EUR 500", "Subtotal: EUR 450.00\nTotal: EUR 500.00", "correct", field="total"),
    C("subtotal-alone-not-chosen", "amount", "EUR 500", "Subtotal: EUR 450.00\nVAT: EUR 50.00", "wrong_value", field="total"),
    C("sub-total-not-chosen", "amount", "EUR 500", "Sub-total: EUR 450.00\nVAT: EUR 50.00", "wrong_value", field="total"),
    C("hyphenated-name", "date", "2024-04-13", "Invoice date: 2024-03-14\nDue-date: 2024-04-13", "correct", field="due_date"),
    C("plural-tolerant", "amount", "GBP 1673.07", "The deposits total £1,673.07. Rent is £950.", "correct", field="deposit"),
    C("alias", "amount", "EUR 24", "Balance: EUR 24.00\nPaid so far: EUR 100.00", "correct", field="amount_due", aliases=["balance"]),
    C("alias-absent", "amount", "EUR 24", "Balance: EUR 24.00\nPaid so far: EUR 100.00", "wrong_value", field="amount_due"),
    C("two-naming-clauses-disagree", "amount", "GBP 1673.07", "Deposit: £1,673.07\nDeposit (2022): £1,500.00\nRent: £950",
      "wrong_value", field="deposit"),
    C("naming-clause-two-values", "amount", "GBP 1673.07", "The deposit is £1,673.07 or £1,500.00. Rent: £950.",
      "wrong_value", field="deposit"),
    C("sentences-in-one-line", "date", "2024-04-13", "The invoice date is 2024-03-14. The due date is 13 April 2024.",
      "correct", field="due_date"),
]

RESTATED = [
    C("two-units", "number", "412.6", "412.6 kg (909.6 lb)", "correct"),
    C("two-units-gold-is-second", "number", "909.6", "412.6 kg (909.6 lb)", "wrong_value"),
    C("two-currencies", "amount", "EUR 1200", "EUR 1,200.00 (USD 1,296.00)", "correct"),
    C("two-currencies-approx", "amount", "EUR 1200", "EUR 1,200.00 (approx. USD 1,296.00)", "correct"),
    C("two-currencies-symbols", "amount", "USD 1296", "$1,296.00 (€1,200.00)", "correct"),
    C("no-unit-first-not-a-restatement", "number", "412.6", "412.6 (909.6 lb)", "wrong_value"),
    C("same-currency-not-a-restatement", "amount", "EUR 1200", "EUR 1,200.00 (EUR 1,296.00)", "wrong_value"),
    C("no-parentheses-not-a-restatement", "number", "412.6", "412.6 kg or 909.6 lb", "wrong_value"),
    C("correction-same-value", "amount", "1234.50", "1,234.50, i.e. 1,234.50", "correct"),
]

_CAR = {"field": "carrier"}
REFUSALS = [
    C("not-named", "amount", "1234.50", "Not named.", "missing"),
    C("not-listed", "amount", "1234.50", "Not listed in the invoice.", "missing"),
    C("not-stated", "date", "2024-03-14", "not stated", "missing"),
    C("not-specified", "id", "PO-1", "Not specified", "missing"),
    C("document-does-not-mention", "text", "DHL Express", "The document does not mention the carrier.", "missing", **_CAR),
    C("document-does-not-mention-no-field", "text", "DHL Express", "The document does not mention the carrier.", "missing"),
    C("document-does-not-mention-decoy", "text", None, "The document does not mention the carrier.", "correct_absent", **_CAR),
    C("there-is-no", "id", "PO-4471", "There is no PO number in the document.", "missing", field="po_number"),
    C("there-is-no-decoy", "id", None, "There is no PO number in the document.", "correct_absent", field="po_number"),
    C("could-not-find", "amount", "24", "I could not find the amount due.", "missing", field="amount_due"),
    C("no-x-is-given", "date", "2024-04-13", "No due date is given.", "missing", field="due_date"),
    C("no-x-is-given-decoy", "date", None, "No due date is given.", "correct_absent", field="due_date"),
    C("section-number-is-no-value", "date", "2024-04-13", "Section 4 does not state a due date", "missing", field="due_date"),
    C("section-number-amount", "amount", "500", "Section 4 does not state the total.", "missing", field="total"),
    C("section-number-amount-no-field", "amount", "500", "Section 4 does not state the total.", "missing"),
    C("date-inside-denial-is-context", "date", "2024-04-13", "The invoice dated 14 March 2024 does not state a due date.",
      "missing", field="due_date"),
    C("enum-refusal", "enum", "paid", "The document does not state the payment status.", "missing", allowed=["paid", "unpaid"]),
    # a value and a denial of the field: never credited
    C("value-then-denial", "amount", "JPY 1335900", "¥1,335,900. The document does not mention the total.",
      "wrong_value", "self_contradicting", field="total"),
    C("value-then-denial-decoy", "amount", None, "¥1,335,900. The document does not mention the total.",
      "hallucinated", field="total"),
    C("value-but-denial", "amount", "JPY 1335900", "The total is ¥1,335,900, but the document does not mention the total.",
      "wrong_value", "self_contradicting", field="total"),
    C("value-bare-denial", "number", "42", "42. Not stated.", "wrong_value", "self_contradicting"),
    C("number-value-and-denial", "number", "42", "The headcount is 42; the headcount is not stated.",
      "wrong_value", "self_contradicting", field="headcount"),
    C("date-value-and-denial", "date", "2024-04-13", "2024-04-13. No due date is given.",
      "wrong_value", "self_contradicting", field="due_date"),
    C("date-value-and-denial-2", "date", "2024-04-13", "The due date is 13 April 2024, but no due date is stated.",
      "wrong_value", "self_contradicting", field="due_date"),
    C("id-value-and-denial", "id", "PO-4471", "PO-4471. There is no PO number in the document.",
      "wrong_value", "self_contradicting", field="po_number"),
    C("id-value-and-denial-2", "id", "PO-4471", "The PO number is PO-4471, however the PO number is not stated.",
      "wrong_value", "self_contradicting", field="po_number"),
    C("text-value-and-denial", "text", "DHL Express", "DHL Express. The document does not mention the carrier.",
      "wrong_value", "self_contradicting", **_CAR),
    C("text-value-and-denial-2", "text", "DHL Express", "The carrier is DHL Express, but the carrier is not stated.",
      "wrong_value", "self_contradicting", **_CAR),
    C("enum-value-and-denial", "enum", "paid", "Paid. The document does not state the status.",
      "wrong_value", "self_contradicting", field="status", allowed=["paid", "unpaid"]),
    C("enum-value-and-denial-2", "enum", "paid", "The status is paid; however, the status is not stated.",
      "wrong_value", "self_contradicting", field="status", allowed=["paid", "unpaid"]),
    # a denial about something else leaves the value standing
    C("denial-of-other-field", "amount", "EUR 500", "The total is EUR 500.00; no discount is mentioned.", "correct", field="total"),
    C("denial-of-other-field-no-name", "amount", "EUR 500", "The total is EUR 500.00; no discount is mentioned.", "correct"),
    C("denied-field-beside-other-value", "amount", "EUR 20", "The total is EUR 500.00; no discount is mentioned.",
      "missing", field="discount"),
    C("denied-decoy-beside-other-value", "amount", None, "The total is EUR 500.00; no discount is mentioned.",
      "correct_absent", field="discount"),
    C("text-denial-of-other-field", "text", "DHL Express", "The carrier is DHL Express. No tracking number is given.",
      "correct", **_CAR),
    C("denial-subject-unknown-without-field", "amount", "JPY 1335900", "¥1,335,900. The document does not mention the total.",
      "correct"),
    C("not-including-is-no-denial", "amount", "EUR 500", "The total, not including VAT, is EUR 500.00.", "correct", field="total"),
    C("does-not-include-is-no-denial", "amount", "EUR 500", "The total does not include VAT: EUR 500.00.", "correct", field="total"),
    C("denial-of-other-thing-after-value", "amount", "EUR 500", "Total EUR 500 with no VAT shown", "correct", field="total"),
    C("denial-of-other-thing-before-not", "amount", "EUR 500", "Total EUR 500 with VAT not shown", "correct", field="total"),
    C("value-inside-denial-of-field", "amount", "EUR 20", "EUR 500 (no discount given)", "missing", field="discount"),
    C("subject-before-not-stated", "amount", "EUR 500", "The total is not stated.", "missing", field="total"),
    C("invoice-no-is-no-denial", "amount", "EUR 500", "Invoice No. 12345 is listed with a total of EUR 500.00.", "wrong_value"),
]

CURRENCY = [
    C("dollar-any-dollar", "amount", "CAD 14208.15", "$14,208.15", "correct"),
    C("dollar-usd", "amount", "USD 14208.15", "$14,208.15", "correct"),
    C("dollar-vs-euro", "amount", "EUR 14208.15", "$14,208.15", "wrong_value", "currency_mismatch"),
    C("prefixed-dollar-specific", "amount", "USD 14208.15", "C$14,208.15", "wrong_value", "currency_mismatch"),
    C("us-dollar-vs-cad", "amount", "CAD 5", "US$5.00", "wrong_value", "currency_mismatch"),
    C("symbol-only-gold", "amount", "$5.00", "USD 5.00", "correct"),
    C("symbol-only-gold-vs-euro", "amount", "$5.00", "EUR 5.00", "wrong_value", "currency_mismatch"),
    C("symbol-only-gold-vs-prefixed", "amount", "$5.00", "A$5.00", "correct"),
    C("kr-sek", "amount", "SEK 1234.50", "kr 1 234,50", "correct"),
    C("kr-dkk-after", "amount", "DKK 1234.50", "1.234,50 kr.", "correct"),
    C("kr-vs-euro", "amount", "EUR 1234.50", "1 234,50 kr", "wrong_value", "currency_mismatch"),
    C("yen-cny", "amount", "CNY 1500", "¥1,500", "correct"),
    C("yen-vs-dollar", "amount", "$1500", "¥1,500", "wrong_value", "currency_mismatch"),
    C("yen-kanji-is-jpy", "amount", "CNY 1500", "1,500円", "wrong_value", "currency_mismatch"),
    C("pound-egp", "amount", "EGP 99.99", "£99.99", "correct"),
    C("franc", "amount", "CHF 1234.50", "Fr. 1'234.50", "correct"),
    C("franc-vs-euro", "amount", "EUR 1234.50", "SFr. 1'234.50", "wrong_value", "currency_mismatch"),
    C("rand", "amount", "ZAR 1234.50", "R 1 234,50", "correct"),
    C("rand-with-cents", "amount", "ZAR 12.50", "R12.50", "correct"),
    C("r-glued-is-no-rand", "amount", "12", "R12", "wrong_value", "unparseable"),
    C("symbol-and-code-same-value", "amount", "USD 100", "$100 (USD 100)", "correct"),
]

_CUR = {"allowed": ["USD", "CAD"], "synonyms": {"dollars": "USD", "canadian dollars": "CAD"}}
ENUM = [
    C("longest-synonym-whole", "enum", "CAD", "Canadian dollars", "correct", **_CUR),
    C("longest-synonym-prose", "enum", "CAD", "The invoice is in Canadian dollars.", "correct", **_CUR),
    C("longest-synonym-not-the-shorter", "enum", "USD", "The invoice is in Canadian dollars.", "wrong_value", **_CUR),
    C("shorter-synonym-alone", "enum", "USD", "The invoice is in dollars.", "correct", **_CUR),
    C("negated-longer-claims-its-words", "enum", "USD", "Dollars, not Canadian dollars.", "correct", **_CUR),
    C("both-named", "enum", "USD", "Either dollars or Canadian dollars.", "wrong_value", **_CUR),
    # a synonym is found in the other grammatical number too; a written entry always wins
    C("singular-of-plural-synonym", "enum", "CAD", "paid in Canadian dollar", "correct", **_CUR),
    C("plural-of-singular-synonym", "enum", "CHF", "Swiss francs", "correct", allowed=["CHF"], synonyms={"swiss franc": "CHF"}),
    C("written-entry-wins", "enum", "b", "units", "correct", allowed=["a", "b"], synonyms={"unit": "a", "units": "b"}),
    C("no-variant-of-short-words", "enum", "USD", "uss", "wrong_value", "invalid_value", allowed=["USD"], synonyms={"us": "USD"}),
    # a currency field knows every ISO code: another one written is a second value
    C("other-iso-code-is-a-second-value", "enum", "KWD", "Kuwaiti dinar (DKK)", "wrong_value", allowed=["KWD", "USD"],
      synonyms={"kuwaiti dinar": "KWD"}),
    C("other-iso-code-alone", "enum", "KWD", "The amounts are in DKK.", "wrong_value", "invalid_value", allowed=["KWD", "USD"]),
    C("lower-case-word-is-no-code", "enum", "USD", "We try to pay in USD.", "correct", allowed=["KWD", "USD"]),
    C("codes-only-in-currency-enums", "enum", "paid", "paid (TRY)", "correct", allowed=["paid", "unpaid"]),
    C("symbol-names-its-currency", "enum", "EUR", "The document lists 120,00 € and 236,00 €", "correct",
      allowed=["EUR", "USD"]),
    C("symbol-names-the-wrong-currency", "enum", "USD", "The document lists 120,00 €", "wrong_value",
      allowed=["EUR", "USD"]),
    C("shared-symbol-with-two-allowed-names-none", "enum", "CAD", "The amounts are $5 and $7", "wrong_value",
      "invalid_value", allowed=["USD", "CAD"]),
    C("shared-symbol-with-one-allowed", "enum", "CAD", "The amounts are $5 and $7", "correct", allowed=["CAD", "EUR"]),
]

STATED_CURRENCY = [
    # one value, and apart from it one currency named: that is the value's currency
    C("currency-in-its-own-sentence-mismatch", "amount", "GBP 2318.64", "The net pay is 2,318.64.\n\nThe currency is USD.",
      "wrong_value", "currency_mismatch"),
    C("currency-in-its-own-sentence-match", "amount", "GBP 3402.18",
      "The closing balance is 3,402.18.\n\nThe currency is British pounds sterling.", "correct"),
    C("two-currencies-named-none-attached", "amount", "EUR 5", "The total is 5.00 (EUR or USD).", "correct"),
    C("lower-case-code-is-a-word", "amount", "EUR 5", "The total is 5.00; we try hard.", "correct"),
    C("dinar-alone-names-no-currency", "amount", "KWD 1234.567", "The total is 1,234.567 in dinars.", "correct"),
]


DROPPED = [
    # a sentence with no token that could even be a damaged value: the field was dropped
    C("copied-id-lines-no-amount", "amount", "EUR 36204.50",
      "Exporter: Kestrel Optics GmbH, EORI DE1234567890123\nDeclarant reference: KO-EXP-2024-0117", "missing"),
    C("dates-only-no-amount", "amount", "EUR 5083.20", "La date est le 12 février 2024, c'est le 12 février.", "missing"),
    C("damaged-value-in-a-sentence", "amount", "EUR 14851.20", "The total is 14,851.2O EUR.", "wrong_value", "unparseable"),
    C("relative-date-is-a-value", "date", "2024-01-01", "The payment is due in 30 days.", "wrong_value", "unparseable"),
    C("short-answer-stays-unparseable", "amount", "EUR 5", "five euros", "wrong_value", "unparseable"),
    C("id-digits-glued-after-a-dash", "number", "388.40", "Office: Hamburg-Waltershof (DE004852), ref KO-EXP-2024-0117", "missing"),
    C("cjk-babble-no-date", "date", "2024-05-31", "最位最佳最佳最佳最佳最佳最佳最佳", "missing"),
    C("a-date-offered-as-an-id", "id", "TC-20240612-33091", "The confirmation number is 06-13-2024.", "wrong_value"),
    # a last fragment cut off while repeating an earlier sentence states no new value
    C("cut-repeat-is-no-second-value", "amount", "USD 38750.00",
      "The declared value is USD 38,750.00.\n\nThe stated value is USD 38,750.00.\n\nThe stated value is USD 38,7", "correct"),
    C("cut-new-sentence-still-counts", "amount", "USD 38750.00", "The value is USD 38,750.00. It is USD 1", "wrong_value"),
]

DIGITS = [
    C("other-number-no-slip", "amount", "6380.00", "a 300", "wrong_value"),
    C("one-vs-two-digits", "amount", "24", "1", "wrong_value"),
    C("three-vs-24", "amount", "24", "3", "wrong_value"),
    C("two-digit-change-too-short", "number", "42", "43", "wrong_value"),
    C("change-keeps-slip", "amount", "500", "600", "wrong_value", "digit_changed"),
    C("substitution-moving-the-point", "number", "12.35", "1.234", "wrong_value"),
    C("drop-moving-the-point", "number", "1234.56", "12.456", "wrong_value"),
    C("damaged-grouping-still-a-drop", "amount", "14851.20", "14,85.20", "wrong_value", "digit_dropped"),
]

DECIMALS = [
    C("four-digit-head-dot", "amount", "1234.56", "1234.560", "correct"),
    C("four-digit-head-comma", "amount", "1234.56", "1234,560", "correct"),
    C("three-digit-head-still-thousands", "amount", "1234", "1.234", "correct"),
    C("kwd-three-decimals", "amount", "KWD 12.5", "KWD 12.500", "correct"),
    C("kwd-gold", "amount", "KWD 1234.567", "KWD 1,234.567", "correct"),
    C("bhd-comma", "amount", "BHD 3.25", "3,250 BHD", "correct"),
    C("euro-three-digits-thousands", "amount", "EUR 12.5", "EUR 12.500", "wrong_value", "scale_error"),
]

ROUNDING = [
    C("truncation-is-a-drop", "amount", "1234.56", "1234.5", "wrong_value", "digit_dropped"),
    C("half-up", "amount", "1234.55", "1234.6", "wrong_value", "rounding"),
    C("half-even", "amount", "1234.65", "1234.6", "wrong_value", "rounding"),
    C("to-integer", "amount", "14851.20", "14851", "wrong_value", "rounding"),
    C("integer-truncation", "amount", "14851.70", "14851", "wrong_value", "digit_dropped"),
    C("rounding-gold-coarser", "amount", "1234.6", "1234.56", "wrong_value", "rounding"),
]

DATES = [
    C("dmy-default", "date", "2024-09-04", "04/09/2024", "correct"),
    C("dmy-explicit", "date", "2024-09-04", "04/09/2024", "correct", date_order="dmy"),
    C("mdy", "date", "2024-04-09", "04/09/2024", "correct", date_order="mdy"),
    C("mdy-swapped-reading", "date", "2024-09-04", "04/09/2024", "wrong_value", "day_month_swap", date_order="mdy"),
    C("dayfirst-false-alias", "date", "2024-04-09", "04/09/2024", "correct", dayfirst=False),
    C("ymd-ambiguous", "date", "2024-04-09", "04/09/2024", "wrong_value", date_order="ymd"),
    C("ymd-ambiguous-other-reading", "date", "2024-09-04", "04/09/2024", "wrong_value", date_order="ymd"),
    C("ymd-ambiguous-decoy", "date", None, "04/09/2024", "hallucinated", date_order="ymd"),
    C("ymd-unambiguous", "date", "2024-09-14", "14/09/2024", "correct", date_order="ymd"),
    C("ymd-same-both-ways", "date", "2024-04-04", "04/04/2024", "correct", date_order="ymd"),
    C("ymd-iso", "date", "2024-09-04", "2024-09-04", "correct", date_order="ymd"),
    C("ymd-disambiguated-in-answer", "date", "2024-09-04", "04/09/2024 (4 September 2024)", "correct", date_order="ymd"),
    C("mdy-gold", "date", "04/09/2024", "9 April 2024", "correct", date_order="mdy"),
    C("dmy-gold", "date", "04/09/2024", "4 September 2024", "correct"),
]

CASES = LISTS + RESTATED + REFUSALS + CURRENCY + STATED_CURRENCY + ENUM + DROPPED + DIGITS + DECIMALS + ROUNDING + DATES


@pytest.mark.parametrize(("kind", "gold", "pred", "outcome", "sub", "opts"), CASES)
def test_review_table(kind: str, gold: Any, pred: Any, outcome: str, sub: str | None, opts: dict[str, Any]) -> None:
    fs = score_field(kind, gold, pred, **opts)
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


def test_details_say_how_the_answer_was_read() -> None:
    fs = score_field("amount", "GBP 1673.07", LEASE, field="tenancy_deposit")
    assert fs.detail == NAMED and fs.pred_norm == "1673.07 £"
    assert score_field("amount", "GBP 1673.07", LEASE).detail == AMBIGUOUS
    assert score_field("text", "DHL", "The document does not mention the carrier.", field="carrier").detail == REFUSAL
    fs = score_field("amount", "JPY 1335900", "¥1,335,900. The document does not mention the total.", field="total")
    assert fs.detail and fs.detail.startswith("self-contradicting")
    fs = score_field("date", "2024-04-09", "04/09/2024", date_order="ymd")
    assert fs.subcode is None and fs.detail and fs.detail.startswith("ambiguous")


def test_list_marker_never_yields_a_candidate() -> None:
    fs = score_field("amount", "24", "1. 2023-04-27 ...")
    assert fs.subcode != "digit_changed" and "1" not in (fs.pred_norm or "").split(" | ")


def test_date_order_reaches_the_gold_reader() -> None:
    assert gold_value("date", "04/09/2024", {}) == DateParts(2024, 9, 4)
    assert gold_value("date", "04/09/2024", {"date_order": "mdy"}) == DateParts(2024, 4, 9)
    assert gold_value("date", "04/09/2024", {"dayfirst": False}) == DateParts(2024, 4, 9)
    assert gold_value("date", "04/09/2024", {"date_order": "ymd"}) is None  # a gold must say which date
    assert gold_value("date", "14/09/2024", {"date_order": "ymd"}) == DateParts(2024, 9, 14)


@pytest.mark.parametrize("opts", [{"date_order": "ydm"}, {"date_order": 1}, {"dayfirst": "no"}])
def test_bad_date_order_is_a_harness_error(opts: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="date_order|dayfirst"):
        score_field("date", "2024-03-14", "2024-03-14", **opts)
    with pytest.raises(ValueError):
        gold_value("date", "2024-03-14", opts)


@pytest.mark.parametrize("opts", [{"field": 3}, {"aliases": [1]}, {"aliases": {"a": "b"}}])
def test_bad_field_name_options_are_harness_errors(opts: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        score_field("amount", "5", "5", **opts)


def test_date_order_is_ignored_outside_dates() -> None:
    assert score_field("amount", "5", "5", date_order="nonsense").outcome == "correct"


_DOC = "Zahlbar ohne Abzug bis 13.04.2024 auf das Konto DE89 3704 0044 0532 0130 00.\nNettobetrag 2.510,45 €"


@pytest.mark.parametrize(("kind", "gold", "output", "outcome"), [
    ("number", "19", "Zahlbar ohne Abzug bis 13.04.2024 auf das Konto DE89 3704 0044 0532 0130", "missing"),
    ("amount", "EUR 2987.44", "Nettobetrag 2.510,45 €", "wrong_value"),  # one value quoted: the distractor picked
    ("number", "19", "The rate is 3704 or 0044.", "wrong_value"),  # its own words: an answer, however poor
    ("amount", "EUR 2510.45", "Nettobetrag   2.510,45 €", "correct"),
    ("number", "19", "Nettobetrag 2.510,45 € Zahlbar ohne Abzug bis 13.04.2024 Konto DE89 3704", "missing"),  # garbled copy
    ("number", "19", "The rates are 3704 and 44 for this customer in this year", "wrong_value"),  # words of its own
])
def test_an_answer_that_only_copies_the_document(kind: str, gold: str, output: str, outcome: str) -> None:
    """Copied document lines offering several values (or none readable) state no value: missing."""
    from evalrun.contract.types import CONTEXT_SEPARATOR, Field, Generation, Item
    from evalrun.evals.scoring import COPIED, score_item

    item = Item(id="d/1/f", pack="d", prompt=_DOC + CONTEXT_SEPARATOR + "Question?", context=_DOC, question="Question?",
                fields=[Field(name="f", kind=kind, gold=gold)])
    score = score_item(item, Generation(item_id=item.id, pack="d", prompt_hash="h", output=output)).fields["f"]
    assert score.outcome == outcome, score
    assert (score.detail == COPIED) == (outcome == "missing")
