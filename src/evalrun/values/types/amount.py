"""amount: a sum of money, a Decimal with an optional currency."""

from __future__ import annotations

from typing import Any

from evalrun.values.locales import written_decimals
from evalrun.values.amounts import AmountCand, fmt_amount
from evalrun.values.currencies import same_currency
from evalrun.values.types._base import SELF_CONTRADICTING, Example, Found, Verdict
from evalrun.values.types._numeric import (
    NUMERIC_SUBCODES, NumericOptions, NumericType, amount_candidates, amount_spans, decimal_default, numeric_subcode,
)

RULES = """\
* Normalised to a Decimal with its sign (minus, parentheses, trailing minus) and currency (symbol
  or ISO code); thousands and decimal separators in both conventions, Swiss apostrophes, lakh
  grouping, no-break and narrow spaces. Correct when the values are equal and, where both sides
  name a currency, the currencies can be the same.
* A span of time is no sum of money: "30 days", "12 Monate", "36日" are not read ("The fee is 30
  days." gives no amount: another shape, never EUR 30); a number field still reads them.
* One value written twice is one candidate: restated in parentheses in another unit or currency
  ("412.6 kg (909.6 lb)", "EUR 1,200.00 (USD 1,296.00)": the first), repeated ("1,234.50, i.e.
  1,234.50"), or a shared symbol beside one of its currencies ("$100 (USD 100)").
* Parentheses mean negative when the parenthesised amount ends the answer and no other number
  precedes it ("(1,234.50)", "Net result: (1,234.50)."); text after it or an earlier number makes
  it an aside ("The total (EUR 5) is due", "EUR 5 (5 EUR)").
* Decimals: with one separator and three digits after it, an amount reads "1.234" and "1,234" as
  thousands, except after an ungrouped integer part of four or more digits ("1234.560" is
  1234.56) and in the three-decimal currencies KWD BHD OMR JOD TND LYD (not IQD: whole dinars)
  ("KWD 12.500" is 12.5). The `decimal` option names the separator instead; without it (or a
  `locale`), an answer whose own numbers, else the document's, write one convention settles it
  ("1,250.00" elsewhere: "12.500" is 12.5; "1.250,00": 12500). One separator used
  for groups and decimals alike ("1.412.50", "1,412,50": groups of three, then one or two digits)
  makes the last one decimal: 1412.50.
* Currencies: a symbol shared by several currencies matches any of them and is resolved by the
  other side: "$" (USD CAD AUD NZD HKD SGD MXN TWD ARS CLP COP; also "dollars"), "kr" (SEK NOK DKK
  ISK), "¥" (JPY CNY), "£" (GBP EGP; also "pounds"). "$14,208.15" is correct for CAD 14208.15 and
  a currency_mismatch for EUR; a gold "$5.00" accepts USD 5.00. Prefixed symbols name one currency
  (C$, US$, A$, HK$, R$, ...), as do "Fr."/"SFr." (CHF), 円 (JPY), 元 (CNY) and "R" (ZAR; only
  right before an amount with cents or thousands groups, so "R12" stays an id).
* Stated currency: an answer with one value and no currency attached, that names one currency
  elsewhere ("2,318.64. The currency is USD."), gives the value that currency (codes in capitals;
  "dinar" alone names none); a currency inside a data row the answer copies (a CSV header
  "DocNo,Date,Description,Amount USD") names none.
* Wrong-value sub-code priority: sign_flip (|pred| == |gold|, signs differ) > scale_error (same
  significant digits, other power of 10, e.g. 0.125 vs 12.5%) > rounding (same sign, and the
  finer value rounded half up or half even to the coarser one's decimals is the coarser one:
  14851.20 vs 14851 or 14851.00, 1234.56 vs 1234.6; a value whose decimals are all zeros counts
  as an integer; a truncation such as 1234.56 vs 1234.5 is digit_dropped; symmetric in gold and
  pred) > digit edits. Digit edits compare the digit strings (as written, and with trailing
  fractional zeros removed; the pair with fewer edits wins): one adjacent swap ->
  digits_transposed, deletions -> digit_dropped, insertions -> digit_inserted, substitutions or a
  mix -> digit_changed, and only when a slip plausibly explains the difference: at most two edits,
  fewer than half the longer digit string, substitutions and swaps keep the integer part's length,
  drops and inserts change it by at most their number. Otherwise no sub-code: "1" vs 24, "300" vs
  6,380.00 and 42 vs 43 are other numbers.
* currency_mismatch only when the values are equal and both sides name a currency that cannot be
  the same; a one-sided currency is not penalised.
* A value-like answer that does not parse ("five euros", "The total is 14,851.2O") is
  wrong_value/unparseable.
"""


class Amount(NumericType[NumericOptions]):
    name = "amount"
    doc = "A sum of money: a signed Decimal and, where written, its currency."
    noun = "an amount"
    rules = RULES
    subcodes = (*NUMERIC_SUBCODES, "currency_mismatch", "unparseable", SELF_CONTRADICTING)
    nonscalar = "unparseable"
    sign_in_words = True
    hint = "an amount with its currency"
    parts = ("currency",)
    partial_examples = (("1,234.50", "currency"), ("The total is 14,851.20.", "currency"))
    gold_options = ("decimal", "locale")
    golds = (("1234.50 EUR", {}), ("-1,234.50", {}), ("$5.00", {}), ("KWD 12.500", {}),
             ("12,34,567.89 INR", {}), ("1.234,5", {"decimal": ","}), ("0", {}))
    examples = {
        "sign_flip": (Example("1234.50", "-1,234.50"), Example("-50 EUR", "EUR 50")),
        "scale_error": (Example("1234.50", "123.45"),),
        "rounding": (Example("14851.20", "14851"),),
        "digits_transposed": (Example("14851.20", "EUR 14,815.20"),),
        "digit_dropped": (Example("14851.20", "EUR 1,481.20"),),
        "digit_inserted": (Example("14851.20", "EUR 148,851.20"),),
        "digit_changed": (Example("14851.20", "EUR 14,857.20"),),
        "currency_mismatch": (Example("EUR 100", "USD 100"),),
        "unparseable": (Example("5", "five euros"),),
        SELF_CONTRADICTING: (Example("1335900", "¥1,335,900. The document does not mention the total.",
                                     {"field": "total"}),),
    }

    def candidates(self, s: str, opts: NumericOptions) -> list[Any]:
        # "1.234" is 1234 in an amount (German thousands; amounts rarely carry three decimals)
        return amount_candidates(s, opts.separator("auto"), True)

    def find(self, s: str, opts: NumericOptions) -> list[Found]:
        return amount_spans(s, opts.separator("auto"), True)

    def fmt(self, value: AmountCand) -> str:
        return fmt_amount(value.value, value.currency)

    def compare(self, g: AmountCand, p: AmountCand, opts: NumericOptions) -> Verdict:
        cur_differs = g.currency and p.currency and not same_currency(g.currency, p.currency)
        if g.value == p.value:
            if cur_differs:
                return "wrong_value", "currency_mismatch", f"{g.currency} != {p.currency}"
            return "correct", None, None
        return "wrong_value", numeric_subcode(g.value, p.value), ("currency also differs" if cur_differs else None)

    def part_values(self, value: AmountCand) -> dict[str, Any]:
        return {"currency": value.currency}

    def reading_options(self, opts: NumericOptions, answer: str, document: str | None) -> NumericOptions:
        """With no `decimal` or `locale`, "12.500" is 12500 (amounts seldom carry three decimals) unless the
        answer's own numbers, else the document's, write one convention ("1,250.00": 12.5)."""
        if opts.decimal is not None or opts.locale is not None:
            return opts
        seps = written_decimals(answer) or (written_decimals(document) if document is not None else frozenset())
        return opts.model_copy(update={"decimal": next(iter(seps))}) if len(seps) == 1 else opts

    def locale_defaults(self, opts: NumericOptions, locale: str) -> dict[str, Any]:
        return decimal_default(opts, locale)
