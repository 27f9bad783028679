"""What each field kind reads from a string: its candidate values, a gold's one
value, and whether the string says "no value".

The scorer (`evalrun.evals.fields`) and the packs that check their golds before
a run (`evalrun.tasks.files_gold`) both read through here, so a gold a pack
accepts is exactly a gold the scorer can compare against.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable

from evalrun.values.absent import is_absent
from evalrun.values.amounts import distinct_amounts, extract_amounts
from evalrun.values.currencies import stated_currency
from evalrun.values.dates import AmbiguousDate, distinct_dates, extract_dates, mask_dates, read_date_order
from evalrun.values.enums import enum_candidates, enum_gold, enum_lookup
from evalrun.values.ids import id_candidates, norm_id
from evalrun.values.text import norm_text, prep

KINDS = ("amount", "number", "date", "id", "text", "enum")
TYPED_KINDS = frozenset({"amount", "number", "date", "id"})

Reader = Callable[[str, dict[str, Any]], list[Any]]


def _amount_reader(use_currency: bool) -> Reader:
    # "1.234" is 1234 in an amount (German thousands; amounts rarely carry three
    # decimals) but 1.234 in a plain number; "1,234" is 1234 in both.
    default_decimal = "auto" if use_currency else "."

    def cands(s: str, opts: dict[str, Any]) -> list[Any]:
        found = distinct_amounts(extract_amounts(s, opts.get("decimal") or default_decimal), use_currency)
        if use_currency and len(found) == 1 and found[0].currency is None and (cur := stated_currency(s)):
            # one value and, apart from it, one currency named: "2,318.64. The currency is USD."
            return [found[0]._replace(currency=cur)]
        return found

    return cands


def _date_cands(s: str, opts: dict[str, Any]) -> list[Any]:
    return distinct_dates(extract_dates(s, read_date_order(opts)))


def _id_cands(s: str, opts: dict[str, Any]) -> list[Any]:
    return list(dict.fromkeys(id_candidates(s)[1]))


def _text_cands(s: str, opts: dict[str, Any]) -> list[Any]:
    return [n] if (n := norm_text(s)) else []


# kind -> the distinct values of that kind found in a string (an answer or a gold)
CANDIDATES: dict[str, Reader] = {
    "amount": _amount_reader(True),
    "number": _amount_reader(False),
    "date": _date_cands,
    "id": _id_cands,
    "text": _text_cands,
    "enum": enum_candidates,
}
# kinds whose gold is read whole rather than as the one candidate found in it
_GOLD_WHOLE: dict[str, Callable[[str, dict[str, Any]], Any]] = {
    "id": lambda s, o: norm_id(s) or None,
    "enum": enum_gold,
}


def gold_value(kind: str, gold: str, opts: dict[str, Any]) -> Any:
    """The gold's one typed value, or None when the reference does not parse as `kind`
    (the scorer then compares it as plain text), including a date that the field's
    `date_order` leaves ambiguous. `opts` as for enum_lookup; ValueError for a
    bad `date_order`."""
    if kind == "enum":
        return enum_gold(gold, opts)
    if len(gold) <= 256:  # references repeat across runs and models: cache them
        order = read_date_order(opts) if kind == "date" else "dmy"
        return _gold_cached(kind, gold, opts.get("decimal"), order)
    return _gold_uncached(kind, gold, opts)


def _gold_uncached(kind: str, gold: str, opts: dict[str, Any]) -> Any:
    whole = _GOLD_WHOLE.get(kind)
    if whole is not None:
        return whole(gold, opts)
    cands = CANDIDATES[kind](gold, opts)
    if len(cands) != 1 or isinstance(cands[0], AmbiguousDate):  # a gold must say which date it is
        return None
    return cands[0]


@lru_cache(maxsize=65536)
def _gold_cached(kind: str, gold: str, decimal: str | None, date_order: str) -> Any:
    return _gold_uncached(kind, gold, {"decimal": decimal, "date_order": date_order})


_VALUE_START = re.compile(r"(?<![\w\-/.])[-+\u2212(]?[$€£¥]?[0-9]")


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def states_no_value(kind: str, s: str) -> bool:
    """A sentence (more than three words) where no token could even be a damaged value of
    the kind: none starts with a digit once dates are masked (dates are a date field's
    values). "Exporter: Kestrel Optics GmbH, EORI DE1234567890123" states no amount (its
    digits belong to an id), while "The total is 14,851.2O" states a damaged one."""
    if sum(not _CJK.search(w) for w in s.split()) + len(_CJK.findall(s)) <= 3:  # an ideograph is a word
        return False
    t = prep(s)
    # a date is a value of a date field, and may be (a wrong) one of an id field
    return not _VALUE_START.search(t if kind in ("date", "id") else mask_dates(t))


def is_absent_value(kind: str, s: str, opts: dict[str, Any]) -> bool:
    """Does `s` (a gold or an answer) say there is no value? An allowed enum value
    ("none") never does; a typed answer that starts with a marker and has no digit
    ("Not found in the document.") does."""
    if kind == "enum" and norm_text(s) in enum_lookup(opts)[0]:
        return False  # "none" may be a legitimate enum value
    return is_absent(s, prefix_rule=kind in TYPED_KINDS)
