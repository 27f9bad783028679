"""quantity: a measured value with its unit (412.6 kg, 3'482 kWh, 1,200 m²)."""

from __future__ import annotations

import re
from decimal import Decimal, Inexact, InvalidOperation, localcontext
from typing import Any, NamedTuple
from pydantic import Field, field_validator

from evalrun.values.amounts import fmt_amount, interpret_number
from evalrun.values.dates import mask_dates
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.text import prep
from evalrun.values.types._base import SELF_CONTRADICTING, Example, Found, Verdict, to_original
from evalrun.values.types._numeric import NUMERIC_SUBCODES, NumericOptions, NumericType, amount_spans, numeric_subcode

D = Decimal
# unit -> (dimension, exact factor to the dimension's base unit); imperial units by definition
UNITS: dict[str, tuple[str, Decimal]] = {
    "t": ("mass", D(1000)), "kg": ("mass", D(1)), "g": ("mass", D("0.001")), "mg": ("mass", D("0.000001")),
    "lb": ("mass", D("0.45359237")), "oz": ("mass", D("0.028349523125")),
    "km": ("length", D(1000)), "m": ("length", D(1)), "cm": ("length", D("0.01")), "mm": ("length", D("0.001")),
    "ft": ("length", D("0.3048")), "in": ("length", D("0.0254")), "yd": ("length", D("0.9144")),
    "mi": ("length", D("1609.344")),
    "m³": ("volume", D(1)), "l": ("volume", D("0.001")), "ml": ("volume", D("0.000001")),
    "m²": ("area", D(1)), "km²": ("area", D(1000000)), "ha": ("area", D(10000)), "ft²": ("area", D("0.09290304")),
    "Wh": ("energy", D(1)), "kWh": ("energy", D(1000)), "MWh": ("energy", D(1000000)), "GWh": ("energy", D(10) ** 9),
    "W": ("power", D(1)), "kW": ("power", D(1000)), "MW": ("power", D(1000000)),
    "pcs": ("count", D(1)),
}
# written forms -> unit (case-sensitive symbols; words in any case)
_SYMBOLS = {"t": "t", "kg": "kg", "g": "g", "mg": "mg", "lb": "lb", "lbs": "lb", "oz": "oz", "km": "km", "m": "m",
            "cm": "cm", "mm": "mm", "ft": "ft", "in": "in", "yd": "yd", "mi": "mi", "m³": "m³", "m3": "m³",
            "l": "l", "L": "l", "ml": "ml", "mL": "ml", "m²": "m²", "m2": "m²", "sqm": "m²", "km²": "km²",
            "ha": "ha", "ft²": "ft²", "sq ft": "ft²", "sqft": "ft²", "Wh": "Wh", "kWh": "kWh", "MWh": "MWh",
            "GWh": "GWh", "W": "W", "kW": "kW", "MW": "MW", "pcs": "pcs", "pc": "pcs", "Stk": "pcs"}
_WORDS = {"tonne": "t", "tonnes": "t", "metric ton": "t", "metric tons": "t", "kilogram": "kg", "kilograms": "kg",
          "kilo": "kg", "kilos": "kg", "gram": "g", "grams": "g", "pound": "lb", "pounds": "lb",
          "kilometre": "km", "kilometres": "km", "kilometer": "km", "kilometers": "km", "metre": "m", "metres": "m",
          "meter": "m", "meters": "m", "centimetre": "cm", "centimetres": "cm", "millimetre": "mm",
          "millimetres": "mm", "foot": "ft", "feet": "ft", "inch": "in", "inches": "in", "mile": "mi", "miles": "mi",
          "litre": "l", "litres": "l", "liter": "l", "liters": "l", "cubic metre": "m³", "cubic metres": "m³",
          "cubic meter": "m³", "cubic meters": "m³", "square metre": "m²", "square metres": "m²",
          "square meter": "m²", "square meters": "m²", "hectare": "ha", "hectares": "ha", "pieces": "pcs",
          "piece": "pcs"}
_ALT = "|".join([re.escape(k) for k in sorted(_SYMBOLS, key=len, reverse=True)]
                + [f"(?i:{re.escape(k)})" for k in sorted(_WORDS, key=len, reverse=True)])
_NUM = r"[0-9]{1,3}(?:[,.'’\u00a0\u202f ][0-9]{3})+(?:[.,][0-9]+)?|[0-9]+(?:[.,][0-9]+)?"
_QTY = re.compile(rf"(?<![\w.,\-/])(?P<sign>[-\u2212])?(?P<num>{_NUM})\ ?(?P<unit>{_ALT})(?![\w²³])")
_RESTATE = re.compile(r"\s*\(\s*(?:(?i:approx\.?|approximately|about|ca\.|circa|i\.e\.|or|=|≈|~)\s*)?\Z")

RULES = """\
* A value is a number and its unit: "412.6 kg", "3'482 kWh", "2.5 t", "1,200 m²", "40 ft", glued
  or spaced, symbols (kg, t, g, mg, lb, oz, km, m, cm, mm, ft, in, yd, mi, l, ml, m³, m², km², ha,
  ft², Wh, kWh, MWh, GWh, W, kW, MW) or words (tonnes, kilograms, metres, feet, litres, ...).
  Numbers as for `number` (`decimal` decides "1,234"). A value restated in parentheses in another
  unit ("412.6 kg (909.6 lb)") is one value, the first.
* Units convert only where the factor is exact (Decimal): t/kg/g/mg, km/m/cm/mm, ft/in/yd/mi to
  metres by definition (1 ft = 0.3048 m), lb/oz to kilograms by definition (1 lb = 0.45359237 kg),
  m³/l/ml, m²/km²/ha/ft², Wh/kWh/MWh/GWh, W/kW/MW. "2.5 t" is correct for a gold of 2,500 kg
  (detail "converted from t"); where only the gold converts exactly into the answer's unit, the
  two are compared in that unit (40 ft is 12.192 m, so "12.2 m" is rounding). A converted value
  that differs gets the number sub-codes.
* unit_mismatch: the same number in a unit of another dimension, or that does not convert to
  the gold's unit exactly ("412.6 m" for 412.6 kg); another number in another dimension is
  wrong_value with no sub-code.
* A bare number is read in the gold's unit, like a one-sided currency: "412.6" is credited for a
  gold of 412.6 kg (there is no missing_unit sub-code). When the answer gives any number with a
  unit, its bare numbers are other facts.
* Wrong-value sub-codes as for numbers (sign_flip > scale_error > rounding > digit edits), then
  unit_mismatch; unparseable for a value-like answer that does not parse.
"""


class Qty(NamedTuple):
    value: Decimal
    unit: str | None


def _unit(written: str) -> str:
    return _SYMBOLS.get(written) or _WORDS.get(written.lower()) or _WORDS[" ".join(written.lower().split())]


def _read(s: str, decimal: str) -> list[tuple[int, int, Qty]]:
    """(start, end, value) in prep(s) of every number with a unit, a restatement left out."""
    t = mask_list_markers(mask_dates(prep(s)))
    out: list[tuple[int, int, Qty]] = []
    for m in _QTY.finditer(t):
        val = interpret_number(m["num"].replace("’", "'"), decimal)
        if val is None:
            continue
        unit = _unit(m["unit"])
        q = Qty(-val if m["sign"] and val else val, unit)
        if out and _RESTATE.match(t[out[-1][1]:m.start()]) and UNITS[out[-1][2].unit or unit][0] == UNITS[unit][0]:
            continue  # "412.6 kg (909.6 lb)": one value, the first
        out.append((m.start(), m.end(), q))
        if len(out) >= 200:
            break
    return out


def _convert(value: Decimal, unit: str, to: str) -> Decimal | None:
    """`value` in `unit` expressed in `to`, only where that is exact; None otherwise."""
    (dim, f), (dim_to, f_to) = UNITS[unit], UNITS[to]
    if dim != dim_to:
        return None
    try:
        with localcontext() as ctx:
            ctx.prec, ctx.traps[Inexact] = 60, True
            return value * f / f_to
    except (Inexact, InvalidOperation, ArithmeticError):
        return None


class QuantityOptions(NumericOptions):
    unit: str | None = Field(default=None, description="the unit of a gold written as a bare number (a `weight_kg` "
                             "column: \"32680\" is 32680 kg); a gold with its own unit keeps it")

    @field_validator("unit", mode="before")
    @classmethod
    def _known_unit(cls, v: Any) -> Any:
        if v is not None and (not isinstance(v, str) or _unit_or_none(v) is None):
            raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {v!r}")
        return v


def _unit_or_none(written: str) -> str | None:
    try:
        return _unit(written)
    except KeyError:
        return None


class Quantity(NumericType[QuantityOptions]):
    name = "quantity"
    doc = "A measured value with its unit; units convert only where the factor is exact."
    noun = "a quantity with a unit"
    rules = RULES
    subcodes = (*NUMERIC_SUBCODES, "unit_mismatch", "unparseable", SELF_CONTRADICTING)
    typed = True
    Options = QuantityOptions
    unparseable = "unparseable"
    hint = "a quantity with its unit"
    parts = ("unit",)
    partial_examples = (("412.6", "unit"), ("The gross weight is 412.6.", "unit"))
    gold_options = ("decimal", "locale", "unit")
    golds = (("412.6 kg", {}), ("3'482 kWh", {}), ("2.5 t", {}), ("1,200 m²", {}), ("40 ft", {}), ("-3 m", {}),
             ("12 litres", {}), ("412,6 kg", {"decimal": ","}), ("32680", {"unit": "kg"}))
    examples = {
        "sign_flip": (Example("412.6 kg", "-412.6 kg"),),
        "scale_error": (Example("412.6 kg", "41.26 kg"), Example("2500 kg", "25 t")),
        "rounding": (Example("412.6 kg", "413 kg"),),
        "digits_transposed": (Example("412.6 kg", "421.6 kg"),),
        "digit_dropped": (Example("412.6 kg", "41.6 kg"),),
        "digit_inserted": (Example("412.6 kg", "4112.6 kg"),),
        "digit_changed": (Example("412.6 kg", "413.6 kg"),),
        "unit_mismatch": (Example("412.6 kg", "412.6 m"), Example("40 ft", "40 kg")),
        "unparseable": (Example("412.6 kg", "four hundred kg"),),
        SELF_CONTRADICTING: (Example("412.6 kg", "The gross weight is 412.6 kg. The document does not state the "
                                    "gross weight.", {"field": "gross weight"}),),
    }

    def find(self, s: str, opts: QuantityOptions) -> list[Found]:
        decimal = opts.separator(".")
        found = [Found(*to_original(s, a, b), q) for a, b, q in _read(s, decimal)]
        if found:
            return found
        return [f._replace(value=Qty(f.value.value, None)) for f in amount_spans(s, decimal, False)]

    def gold(self, s: str, opts: QuantityOptions) -> Any | None:
        value = super().gold(s, opts)
        if value is not None and value.unit is None and opts.unit:
            return value._replace(unit=_unit(opts.unit))  # a bare gold in the field's declared unit
        return value

    def fmt(self, value: Qty) -> str:
        return fmt_amount(value.value, value.unit)

    def compare(self, g: Qty, p: Qty, opts: QuantityOptions) -> Verdict:
        gold, value, note = g.value, p.value, None
        if g.unit and p.unit and g.unit != p.unit:
            if (converted := _convert(p.value, p.unit, g.unit)) is not None:
                value, note = converted, f"converted from {p.unit}"
            elif (in_pred_unit := _convert(g.value, g.unit, p.unit)) is not None:  # 40 ft is 12.192 m
                gold, note = in_pred_unit, f"compared in {p.unit}"
            else:
                other = f"{p.unit} does not convert exactly to {g.unit}"
                return ("wrong_value", "unit_mismatch", other) if p.value == g.value else ("wrong_value", None, other)
        if value == gold:
            return "correct", None, note
        return "wrong_value", numeric_subcode(gold, value), note

    def part_values(self, value: Qty) -> dict[str, Any]:
        return {"unit": value.unit}
