"""number: a plain number (a count, a rate, a measurement), currency ignored."""

from __future__ import annotations

from typing import Any

from evalrun.values.locales import read_decimal
from evalrun.values.amounts import AmountCand, fmt_amount
from evalrun.values.types._base import SELF_CONTRADICTING, Example, FieldType, Found, Verdict
from evalrun.values.types._numeric import (
    NUMERIC_SUBCODES, NumericOptions, amount_candidates, amount_spans, number_verdict,
)

RULES = """\
* Read as an amount is, without its currency: a currency written beside it is ignored, and so is
  a percent sign ("12.5%" is 12.5). Correct when the values are equal.
* Decimals: "1.234" is 1.234 and "1,234" is 1234 unless `decimal` says "," (then "1,234" is
  1.234 and "1.234" is 1234).
* Of several numbers in the clause naming the field, each written with its unit, the one in the
  unit the question asks for is read when every other is in another unit ("4.215 kWh x 24,85
  Cent/kWh" when the price in cents per kWh is asked: 24.85); two in the asked unit, or a bare
  number beside it, are several values.
* Wrong-value sub-codes as for amount: sign_flip > scale_error > rounding > digits_transposed /
  digit_dropped / digit_inserted / digit_changed (only where a slip of one or two digits
  plausibly explains the difference), and unparseable for a value-like answer that does not
  parse.
"""


class Number(FieldType):
    name = "number"
    doc = "A plain number: a signed Decimal; currency and percent signs are ignored."
    noun = "a number"
    rules = RULES
    subcodes = (*NUMERIC_SUBCODES, "unparseable", SELF_CONTRADICTING)
    typed = True
    Options = NumericOptions
    unparseable = "unparseable"
    gold_options = ("decimal", "locale")
    golds = (("1234.5", {}), ("-7", {}), ("12.5%", {}), ("1.234", {}), ("1,5", {"decimal": ","}))
    examples = {
        "sign_flip": (Example("24", "-24"),),
        "scale_error": (Example("12.5", "0.125"),),
        "rounding": (Example("1234.56", "1234.6"),),
        "digits_transposed": (Example("1234", "1243"),),
        "digit_dropped": (Example("1234.56", "1234.5"),),
        "digit_inserted": (Example("1234", "12834"),),
        "digit_changed": (Example("1234", "1284"),),
        "unparseable": (Example("5", "five"),),
        SELF_CONTRADICTING: (Example("24", "The count is 24. The document does not state the count.",
                                     {"field": "count"}),),
    }

    def candidates(self, s: str, opts: dict[str, Any]) -> list[Any]:
        return amount_candidates(s, read_decimal(opts, "."), False)

    def find(self, s: str, opts: dict[str, Any]) -> list[Found]:
        return amount_spans(s, read_decimal(opts, "."), False)

    def fmt(self, value: AmountCand) -> str:
        return fmt_amount(value.value)

    def compare(self, g: AmountCand, p: AmountCand, opts: dict[str, Any]) -> Verdict:
        return number_verdict(g.value, p.value)

    def canonical_options(self, opts: dict[str, Any]) -> dict[str, Any]:
        return {**opts, "decimal": "."}
