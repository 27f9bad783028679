"""What the numeric types share: options, amounts with spans, and the sub-codes of two numbers."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, TypeVar

from pydantic import Field, field_validator

from evalrun.values.amounts import (
    AMOUNT_RE, AmountCand, distinct_amounts, extract_amounts, interpret_number, not_money,
)
from evalrun.values.currencies import THREE_DECIMAL, currency_code, stated_currency
from evalrun.values.dates import mask_dates
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.locales import locale_decimal, read_decimal
from evalrun.values.numeric_subcodes import NUMERIC_SUBCODES, numeric_subcode
from evalrun.values.text import prep
from evalrun.values.types._base import FieldType, Found, LocaleOptions, to_original

__all__ = ["NUMERIC_SUBCODES", "NumericOptions", "NumericType", "amount_candidates", "amount_spans", "decimal_default",
           "numeric_subcode", "number_verdict"]


class NumericOptions(LocaleOptions):
    decimal: str | None = Field(
        default=None, description="the decimal separator ('.' or ',') for the ambiguous \"1.234\" / \"1,234\"")

    @field_validator("decimal", mode="before")
    @classmethod
    def _decimal(cls, v: Any) -> Any:
        if v is not None and v not in (".", ",", "auto"):
            raise ValueError(f"decimal must be '.' or ','; got {v!r}")
        return v

    def separator(self, default: str) -> str:
        """The decimal separator read: `decimal`, else the `locale`'s, else `default`."""
        return read_decimal(self.decimal, self.locale, default)


N = TypeVar("N", bound=NumericOptions)


class NumericType(FieldType[N]):
    """What the numeric types declare alike; `fmt` writes "." as the decimal separator."""

    typed = True
    Options = NumericOptions
    unparseable = "unparseable"

    def canonical_options(self, opts: N) -> N:
        return opts.model_copy(update={"decimal": "."})


def decimal_default(opts: NumericOptions, locale: str) -> dict[str, Any]:
    """The decimal separator a locale writes, where the options give none (amount, number)."""
    sep = locale_decimal(locale)
    return {"decimal": sep} if opts.decimal is None and sep else {}


def amount_candidates(s: str, decimal: str, use_currency: bool) -> list[AmountCand]:
    """The distinct amounts in `s`; one value and one currency named apart ("2,318.64. The currency is USD.") join."""
    found = distinct_amounts(extract_amounts(s, decimal, use_currency), use_currency)
    if use_currency and len(found) == 1 and found[0].currency is None and (cur := stated_currency(s)):
        return [found[0]._replace(currency=cur)]
    return found


def amount_spans(s: str, decimal: str, use_currency: bool) -> list[Found]:
    """Every amount mention with its span, on the match it was read from (a dropped restatement has none)."""
    cands = extract_amounts(s, decimal, use_currency)
    t = mask_list_markers(mask_dates(prep(s)))
    out: list[Found] = []
    i = 0
    for m in AMOUNT_RE.finditer(t):
        if i >= len(cands):
            break
        if use_currency and not_money(t, m):
            continue  # "30 days", "8%" are no sum of money
        cur = currency_code(m["c1"] or m["c2"])
        val = interpret_number(m["num"], decimal, cur in THREE_DECIMAL)
        if val is None or abs(val) != abs(cands[i].value) or cur != cands[i].currency:
            continue
        start, end = to_original(s, *m.span())
        c = cands[i]
        out.append(Found(start, end, c if use_currency or c.currency is None else AmountCand(c.value, None)))
        i += 1
    distinct = amount_candidates(s, decimal, use_currency)
    if use_currency and len(distinct) == 1 and out and all(f.value.currency is None for f in out):
        out = [f._replace(value=distinct[0]) for f in out]  # the currency stated apart from the value
    return out


def number_verdict(g: Decimal, p: Decimal) -> tuple[str, str | None, str | None]:
    """Equal numbers are correct; otherwise why they differ."""
    return ("correct", None, None) if g == p else ("wrong_value", numeric_subcode(g, p), None)
