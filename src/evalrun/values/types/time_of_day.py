"""time_of_day: a clock time ("14:30", "2:30 pm", "14h30"), read as minutes since midnight."""

from __future__ import annotations

import re

from evalrun.values.types._base import SELF_CONTRADICTING, Example, FieldType, Found, Options, Verdict

RULES = """\
* Read as minutes since midnight from "14:30", "14:30:15" (seconds dropped), "14h30", "2:30 pm",
  "2:30 p.m." and "2 pm"; 12 am is midnight, 12 pm noon. A bare number ("14") is no time, nor
  is an hour past 23, a minute past 59 or an hour past 12 beside am/pm.
* Correct when the times are equal. am_pm_swap: the times are twelve hours apart (a 12-hour
  answer without am/pm, or the wrong one: "2:30" or "2:30 am" for 14:30).
* A value-like answer that does not parse ("half past two") is wrong_value/unparseable.
"""

_TIME = re.compile(r"(?<![\d:.,])(\d{1,2})(?:[:hH](\d{2})(?::\d{2})?)?(?:\s?([aApP])\.?[mM]\.?)?(?![\w:])")


def _minutes(m: re.Match[str]) -> int | None:
    hour, minute, half = int(m[1]), int(m[2] or 0), (m[3] or "").lower()
    if (m[2] is None and not half) or minute > 59 or hour > (12 if half else 23) or (half and hour == 0):
        return None
    if half:
        hour = hour % 12 + (12 if half == "p" else 0)
    return hour * 60 + minute


class TimeOfDay(FieldType[Options]):
    name = "time_of_day"
    doc = "A clock time, read as minutes since midnight from 24-hour or am/pm forms."
    noun = "a time of day"
    rules = RULES
    subcodes = ("am_pm_swap", "unparseable", SELF_CONTRADICTING)
    typed = True
    unparseable = "unparseable"
    nonscalar = "unparseable"
    hint = "a time of day (HH:MM)"
    golds = (("14:30", {}), ("2:30 pm", {}), ("14h30", {}), ("9 am", {}), ("12:05 a.m.", {}), ("00:00", {}))
    examples = {
        "am_pm_swap": (Example("14:30", "2:30"), Example("14:30", "2:30 am"), Example("09:00", "9 pm")),
        "unparseable": (Example("14:30", "half past two"),),
        SELF_CONTRADICTING: (Example("14:30", "The meeting time is 14:30. The document does not state the "
                                     "meeting time.", {"field": "meeting_time"}),),
    }

    def find(self, s: str, opts: Options) -> list[Found]:
        return [Found(m.start(), m.end(), v) for m in _TIME.finditer(s) if (v := _minutes(m)) is not None]

    def fmt(self, value: int) -> str:
        return f"{value // 60:02d}:{value % 60:02d}"

    def compare(self, g: int, p: int, opts: Options) -> Verdict:
        if g == p:
            return "correct", None, None
        return "wrong_value", "am_pm_swap" if abs(g - p) == 720 else None, None
