"""The value written in the unit the question asks for.

"What is the energy price in cents per kWh?" answered "4.215 kWh x 24,85 Cent/kWh ≈
...": the answer writes several numbers, each with its unit, and only one of them in
the unit asked (cents per kWh); the others are written in another unit (kWh: an
energy, not a price), so they are other facts and the one in the asked unit is the
answer. The asked unit is what the answer's units share with the question's words: a
value's unit is the asked one when its words are exactly those ("Cent/kWh"), not a
part of them ("kWh") nor words the question does not use ("t" when kg is asked).
A bare number is in no unit: beside one, nothing is chosen.
"""

from __future__ import annotations

import re
from typing import Any

from evalrun.values.clauses import Names, words
from evalrun.values.registry import field_type

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
    if m["pct"]:
        return frozenset({"percent"})
    return frozenset(w for w in words(m["unit"]) if w != "per")


def value_in_asked_unit(kind: str, text: str, opts: dict[str, Any], asked: Names) -> Any | None:
    """The one value `text` writes in the unit the question asks for, when every other
    value it writes is in another unit; None otherwise (and for every type but `number`:
    the others read their units themselves)."""
    if kind != "number" or not asked:
        return None
    found = field_type(kind).find(text, opts)
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
