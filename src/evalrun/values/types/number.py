"""number: a plain number (a count, a rate, a measurement), currency ignored; of several, the one in the
unit the question asks for (docs/field-types.md, 'number')."""

from __future__ import annotations

import re
from typing import Any

from evalrun.values.amounts import AmountCand, fmt_amount
from evalrun.values.clauses import Names, words
from evalrun.values.types._base import SELF_CONTRADICTING, Example, Found, Verdict
from evalrun.values.types._numeric import (
    NUMERIC_SUBCODES, NumericOptions, NumericType, amount_candidates, amount_spans, decimal_default, number_verdict,
)

# the unit written right after a number: "%", "kWh", "Cent/kWh", "cents per kWh", "t"
_UNIT = re.compile(r"[ \u00a0]?(?:(?P<pct>%)|(?P<unit>[^\W\d_]{1,12}(?:[ ]?/[ ]?[^\W\d_]{1,12}|[ ]per[ ][^\W\d_]{1,12})?))"
                   r"(?![\w])")
# what a unit may be written with: symbols and words of measures, money's minor units, time (not "in":
# "26 in 2022" is no length in inches)
_UNIT_WORDS = frozenset("""
kwh mwh gwh wh kw mw w kg g mg t tonne ton lb oz km m cm mm mi ft yd l ml litre liter metre meter
cent ct rappen paise penny pence ore eurocent percent day week month year hour minute second
pc pcs piece unit box crate pallet
""".split())


def _unit_words(text: str, end: int) -> frozenset[str]:
    m = _UNIT.match(text, end)
    if m is None:
        return frozenset()
    return frozenset({"percent"}) if m["pct"] else frozenset(w for w in words(m["unit"]) if w != "per")


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


class Number(NumericType[NumericOptions]):
    name = "number"
    doc = "A plain number: a signed Decimal; currency and percent signs are ignored."
    noun = "a number"
    rules = RULES
    subcodes = (*NUMERIC_SUBCODES, "unparseable", SELF_CONTRADICTING)
    nonscalar = "unparseable"
    sign_in_words = True
    hint = "a number"
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

    def candidates(self, s: str, opts: NumericOptions) -> list[Any]:
        return amount_candidates(s, opts.separator("."), False)

    def find(self, s: str, opts: NumericOptions) -> list[Found]:
        return amount_spans(s, opts.separator("."), False)

    def fmt(self, value: AmountCand) -> str:
        return fmt_amount(value.value)

    def compare(self, g: AmountCand, p: AmountCand, opts: NumericOptions) -> Verdict:
        return number_verdict(g.value, p.value)

    def locale_defaults(self, opts: NumericOptions, locale: str) -> dict[str, Any]:
        return decimal_default(opts, locale)

    def in_asked_unit(self, text: str, opts: NumericOptions, asked: Names) -> Any | None:
        """The one value in the unit the question asks for, when every other is in another unit; else None.
        The asked unit is exactly the words the answer's units share with the question ("Cent/kWh", not "kWh");
        a bare number is in no unit."""
        if not asked:
            return None
        found = self.find(text, opts)
        if len(found) < 2:
            return None
        known = frozenset().union(*asked)
        units = [_unit_words(text, f.end) for f in found]
        asked_unit = frozenset().union(*units) & known
        if not asked_unit:
            return None
        chosen = {f.value for f, u in zip(found, units) if u == asked_unit}
        others = [u for u in units if u != asked_unit]
        if len(chosen) != 1 or not others or not all(u and u <= _UNIT_WORDS for u in others):
            return None
        return chosen.pop()
