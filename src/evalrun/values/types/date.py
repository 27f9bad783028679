"""date: a calendar date at the precision written (year, month, day)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Hashable
from typing import Any, Literal

from pydantic import Field, field_validator

from evalrun.values.dates import (
    AmbiguousDate, DateParts, distinct_dates, extract_dates, find_dates, fmt_date, read_date_order,
)
from evalrun.values.locales import locale_date_order
from evalrun.values.text import prep
from evalrun.values.types._base import (
    SELF_CONTRADICTING, Example, FieldType, Found, LocaleOptions, Verdict, stripped, to_original,
)

RULES = """\
* Read as (year, month, day) from ISO forms, numeric forms (14.03.2024, 03/14/2024, 14-3-24),
  written months in English, German and French ("14 March 2024", "3. März 2024", "le 3 mars
  2024") and CJK forms (2024年3月5日). Compact 20240314 and a bare year are read only as a whole
  value. Two-digit years pivot 00-69 -> 20xx.
* Compared at the gold's precision (gold 2024-03 accepts 2024-03-14). A prediction lacking a part
  the gold has ("March 14" for 2024-03-14) is wrong_value, sub-code None, detail
  "incomplete: ..."; nothing is filled from today.
* `date_order` decides a numeric a/b/yyyy (or a/b/yy) where both parts could be the month:
  04/09/2024 is 4 September under dmy, 9 April under mdy; under ymd it is wrong_value with detail
  "ambiguous: ..." (never credited, never day_month_swap), and a gold written so is not a date.
  It applies to the gold as well.
* Sub-codes: day_month_swap > off_by_one_day > wrong_year; a value-like answer that does not
  parse is unparseable.
"""

_NAMES = ("year", "month", "day")


class DateOptions(LocaleOptions):
    date_order: Literal["dmy", "mdy", "ymd"] | None = Field(
        default=None, description="which part of a numeric a/b/yyyy date comes first: dmy (default), mdy or ymd "
        "(neither: such a date is ambiguous)")
    dayfirst: bool | None = Field(default=None, description="the older spelling of date_order: true = dmy, false = mdy")

    @field_validator("date_order", "dayfirst", mode="before")
    @classmethod
    def _order(cls, v: Any, info: Any) -> Any:
        if v is None:
            return v
        return read_date_order({info.field_name: v}) if info.field_name == "date_order" else (
            read_date_order({"dayfirst": v}) == "dmy")

    @property
    def order(self) -> str:
        """The date order read: `date_order`, else `dayfirst`, else the `locale`'s, else dmy."""
        return read_date_order({"date_order": self.date_order, "dayfirst": self.dayfirst, "locale": self.locale})


class Date(FieldType[DateOptions]):
    name = "date"
    doc = "A calendar date: year, month and day, each only where written."
    noun = "a calendar date"
    rules = RULES
    subcodes = ("day_month_swap", "off_by_one_day", "wrong_year", "unparseable", SELF_CONTRADICTING)
    typed = True
    Options = DateOptions
    unparseable = "unparseable"
    nonscalar = "unparseable"
    dates_are_values = True
    hint = "a date (YYYY-MM-DD)"
    parts = _NAMES
    partial_examples = (("March 14", "year"), ("14 March", "year"), ("March 2024", "day"),
                        ("2024", "month"), ("The invoice is dated 14 March.", "year"))
    golds = (("2024-03-14", {}), ("14 March 2024", {}), ("March 2024", {}), ("2024", {}),
             ("04/09/2024", {"date_order": "mdy"}), ("2024年3月5日", {}))
    examples = {
        "day_month_swap": (Example("2024-03-04", "2024-04-03"),),
        "off_by_one_day": (Example("2024-03-14", "13 March 2024"),),
        "wrong_year": (Example("2024-03-14", "14 March 2023"),),
        "unparseable": (Example("2024-03-14", "the fourteenth"),),
        SELF_CONTRADICTING: (Example("2024-03-14", "The due date is 14 March 2024. No due date is given.",
                                     {"field": "due date"}),),
    }

    def candidates(self, s: str, opts: DateOptions) -> list[Any]:
        return distinct_dates(extract_dates(s, opts.order))

    def find(self, s: str, opts: DateOptions) -> list[Found]:
        order = opts.order
        found = [Found(*to_original(s, a, b), p) for a, b, p in find_dates(prep(s), order)[:200]]
        if not found and (whole := extract_dates(s, order)):  # a compact date or a bare year, read whole
            found = [Found(*stripped(s), whole[0])]
        return found

    def gold(self, s: str, opts: DateOptions) -> Any | None:
        cands = self.candidates(s, opts)
        if len(cands) != 1 or isinstance(cands[0], AmbiguousDate):  # a gold must say which date it is
            return None
        return cands[0]

    def gold_key(self, opts: DateOptions) -> Hashable | None:
        return (("date_order", opts.order),)

    def fmt(self, value: DateParts | AmbiguousDate) -> str:
        return fmt_date(value)

    def compare(self, g: DateParts, p: DateParts | AmbiguousDate, opts: DateOptions) -> Verdict:
        if isinstance(p, AmbiguousDate):  # never credited, never a day/month swap
            return "wrong_value", None, f"ambiguous: {p.a:02d}/{p.b:02d}/{p.y} is either day or month first (date_order ymd)"
        lacking = [n for n, gv, pv in zip(_NAMES, g, p) if gv is not None and pv is None]
        if lacking:
            return "wrong_value", None, "incomplete: answer has no " + " or ".join(lacking)
        if all(gv is None or gv == pv for gv, pv in zip(g, p)):
            return "correct", None, None
        if g.m is not None and g.d is not None:
            year_ok = g.y is None or g.y == p.y
            if year_ok and g.m != g.d and (p.m, p.d) == (g.d, g.m):
                return "wrong_value", "day_month_swap", None
            try:
                gd = _dt.date(g.y if g.y is not None else 2000, g.m, g.d)
                pd = _dt.date(p.y if g.y is not None and p.y is not None else 2000, p.m or 1, p.d or 1)
                if abs((gd - pd).days) == 1:
                    return "wrong_value", "off_by_one_day", None
            except ValueError:
                pass  # not a calendar date (e.g. 31 February): no day arithmetic to compare
        if g.y is not None and p.y != g.y and (g.m is None or g.m == p.m) and (g.d is None or g.d == p.d):
            return "wrong_value", "wrong_year", None
        return "wrong_value", None, None

    def part_values(self, value: DateParts | AmbiguousDate) -> dict[str, Any]:
        if isinstance(value, AmbiguousDate):
            return {"year": value.y, "month": None, "day": None}
        return dict(zip(_NAMES, value))

    def canonical_options(self, opts: DateOptions) -> DateOptions:
        return opts.model_copy(update={"date_order": None, "dayfirst": None})

    def locale_defaults(self, opts: DateOptions, locale: str) -> dict[str, Any]:
        if opts.date_order is not None or opts.dayfirst is not None:
            return {}
        order = locale_date_order(locale)
        return {"date_order": order} if order is not None else {}
