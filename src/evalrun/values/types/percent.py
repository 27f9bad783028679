"""percent: a rate in percent (VAT rate, interest rate, discount)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, NamedTuple

from evalrun.values.amounts import AMOUNT_RE, interpret_number
from evalrun.values.dates import mask_dates
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.text import prep
from evalrun.values.types._base import SELF_CONTRADICTING, Example, Found, Verdict, to_original
from evalrun.values.types._numeric import NUMERIC_SUBCODES, NumericOptions, NumericType, number_verdict

RULES = """\
* A value is a number of percent: "19 %", "19%", "19 percent", "19 per cent", "19 Prozent",
  "19 pour cent", "7,7 %" (a decimal comma with one or two digits is read as decimal; `decimal`
  decides "1,234"), with its sign.
* A number written without a percent sign is read in percent too: "19" is credited for a gold of
  19%. A fraction is not converted: "0.19" for a gold of 19% is wrong_value/scale_error, never
  credited (the answer wrote another number).
* When the answer marks any number with a percent sign, its unmarked numbers are other facts
  ("19% of EUR 1,000": 19); a number with a currency is never a percent. Several different
  marked values are not credited.
* Wrong-value sub-codes as for numbers: sign_flip > scale_error > rounding > digit edits
  (digits_transposed, digit_dropped, digit_inserted, digit_changed); unparseable for a
  value-like answer that does not parse ("nineteen percent").
"""

_WORD = re.compile(r"\s?(?:%|(?i:percent|per\s?cent|pct\.?|prozent|pour\s?cent|por\s?ciento|per\s?cento))"
                   r"(?![A-Za-z])")


class Pct(NamedTuple):
    value: Decimal
    sign: str | None  # "%" where the answer marks the value as percent


def _read(s: str, decimal: str) -> list[tuple[int, int, Pct]]:
    """(start, end, value) in prep(s) of every number that is no amount of money."""
    t = mask_list_markers(mask_dates(prep(s)))
    out: list[tuple[int, int, Pct]] = []
    for m in AMOUNT_RE.finditer(t):
        if m["c1"] or m["c2"]:
            continue  # "EUR 19" is money, not a rate
        val = interpret_number(m["num"], decimal)
        if val is None:
            continue
        if (m["s1"] and m["s1"] != "+") or (m["s2"] and m["s2"] != "+") or m["tm"]:
            val = -val
        end, sign = m.end(), "%" if m["pct"] else None
        if sign is None and (w := _WORD.match(t, end)):
            end, sign = w.end(), "%"
        out.append((m.start(), end, Pct(abs(val) if val == 0 else val, sign)))
        if len(out) >= 200:
            break
    if any(p.sign for _, _, p in out):
        out = [f for f in out if f[2].sign]
    return out


class Percent(NumericType[NumericOptions]):
    name = "percent"
    doc = "A rate in percent; a bare number is read in percent, a fraction is not converted."
    noun = "a percentage"
    rules = RULES
    subcodes = (*NUMERIC_SUBCODES, "unparseable", SELF_CONTRADICTING)
    hint = "a percentage"
    parts = ("percent_sign",)
    partial_examples = (("19", "percent_sign"), ("The rate is 7.5.", "percent_sign"))
    gold_options = ("decimal", "locale")
    golds = (("19%", {}), ("19 %", {}), ("7,7 %", {}), ("-0.5%", {}), ("19", {}), ("12 percent", {}))
    examples = {
        "sign_flip": (Example("0.5%", "-0.5%"),),
        "scale_error": (Example("19%", "0.19"), Example("19%", "1.9%")),
        "rounding": (Example("7.75%", "7.8%"),),
        "digits_transposed": (Example("12.5%", "15.2%"),),
        "digit_dropped": (Example("12.5%", "1.5%"),),
        "digit_inserted": (Example("12.5%", "122.5%"),),
        "digit_changed": (Example("12.5%", "13.5%"),),
        "unparseable": (Example("19%", "nineteen percent"),),
        SELF_CONTRADICTING: (Example("19%", "The VAT rate is 19%. The document does not state the VAT rate.",
                                     {"field": "VAT rate"}),),
    }

    def candidates(self, s: str, opts: NumericOptions) -> list[Any]:
        return list(dict.fromkeys(p for _, _, p in _read(s, opts.separator("."))))

    def find(self, s: str, opts: NumericOptions) -> list[Found]:
        return [Found(*to_original(s, a, b), p) for a, b, p in _read(s, opts.separator("."))]

    def fmt(self, value: Pct) -> str:
        return f"{format(value.value, 'f')}{value.sign or ''}"

    def compare(self, g: Pct, p: Pct, opts: NumericOptions) -> Verdict:
        return number_verdict(g.value, p.value)

    def part_values(self, value: Pct) -> dict[str, Any]:
        return {"percent_sign": value.sign}
