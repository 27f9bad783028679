"""Property tests for evals.scoring.fields: formatting invariance, totality, reflexivity."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evalrun.values import KINDS
from evalrun.evals.scoring import OUTCOMES, SUBCODES, score_field
from evalrun.contract.types import FieldScore
from evalrun.values.text import is_absent

# FIELDS_HYPOTHESIS_EXAMPLES=5000 for a deeper run than the default.
SETTINGS = settings(
    max_examples=int(os.environ.get("FIELDS_HYPOTHESIS_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# ---------------------------------------------------------------- amount formatting

CONVENTIONS = {
    # name: (thousands separator, decimal separator)
    "en": (",", "."),
    "de": (".", ","),
    "fr-space": (" ", ","),
    "fr-nbsp": ("\u00a0", ","),
    "fr-narrow-nbsp": ("\u202f", ","),
    "ch": ("'", "."),
    "plain-dot": ("", "."),
    "plain-comma": ("", ","),
}
CURRENCIES = {"EUR": "€", "USD": "$", "GBP": "£"}
PLACEMENTS = ("none", "symbol-before", "symbol-after", "code-before", "code-after", "code-glued")
NEGATIVES = ("minus", "unicode-minus", "parentheses", "trailing-minus")


def format_number(value: Decimal, decimals: int, conv: str) -> str:
    thousands, dec = CONVENTIONS[conv]
    text = f"{abs(value):.{decimals}f}"
    int_part, _, frac = text.partition(".")
    groups = []
    while len(int_part) > 3:
        groups.insert(0, int_part[-3:])
        int_part = int_part[:-3]
    groups.insert(0, int_part)
    out = thousands.join(groups)
    return out + (dec + frac if decimals else "")


def place_currency(num: str, code: str, placement: str) -> str:
    sym = CURRENCIES[code]
    return {
        "none": num,
        "symbol-before": f"{sym}{num}",
        "symbol-after": f"{num} {sym}",
        "code-before": f"{code} {num}",
        "code-after": f"{num} {code}",
        "code-glued": f"{code}{num}",
    }[placement]


def negate(text: str, how: str) -> str:
    return {
        "minus": f"-{text}",
        "unicode-minus": f"\u2212{text}",
        "parentheses": f"({text})",
        "trailing-minus": f"{text}-",
    }[how]


@st.composite
def amounts(draw: Any) -> tuple[Decimal, int]:
    decimals = draw(st.integers(0, 2))
    units = draw(st.integers(0, 10**9 * 10**decimals))
    return Decimal(units).scaleb(-decimals), decimals


@SETTINGS
@given(
    amount=amounts(),
    negative=st.booleans(),
    conv=st.sampled_from(sorted(CONVENTIONS)),
    placement=st.sampled_from(PLACEMENTS),
    neg_style=st.sampled_from(NEGATIVES),
    code=st.sampled_from(sorted(CURRENCIES)),
    gold_has_code=st.booleans(),
)
def test_any_supported_amount_format_is_correct(
    amount: tuple[Decimal, int], negative: bool, conv: str, placement: str, neg_style: str, code: str, gold_has_code: bool
) -> None:
    value, decimals = amount
    signed = -value if negative else value
    pred = place_currency(format_number(value, decimals, conv), code, placement)
    if negative:
        pred = negate(pred, neg_style)
    gold = f"{signed:f} {code}" if gold_has_code else f"{signed:f}"
    fs = score_field("amount", gold, pred)
    assert fs.outcome == "correct", (gold, pred, fs)
    # the same value inside a sentence is still one candidate
    sentence = score_field("amount", gold, f"The total amount due is {pred}.")
    assert sentence.outcome == "correct", (gold, pred, sentence)


@SETTINGS
@given(amount=amounts(), conv=st.sampled_from(sorted(CONVENTIONS)))
@pytest.mark.slow
def test_amount_digit_edits_are_never_correct(amount: tuple[Decimal, int], conv: str) -> None:
    value, decimals = amount
    pred = format_number(value, decimals, conv)
    digits = [i for i, c in enumerate(pred) if c.isdigit()]
    i = digits[0]
    changed = pred[:i] + str((int(pred[i]) + 1) % 10) + pred[i + 1:]
    fs = score_field("amount", f"{value:f}", changed)
    assert fs.outcome == "wrong_value", (value, changed, fs)


@SETTINGS
@given(a=st.integers(0, 10**12), left=st.integers(1, 9), right=st.integers(0, 9))
def test_digit_boundaries(a: int, left: int, right: int) -> None:
    """A gold number is never found inside a longer run of digits."""
    for longer in (f"{left}{a}", f"{a}{right}"):
        if int(longer) == a:  # "00" is 0
            continue
        assert score_field("number", str(a), f"The ID is {longer}.").outcome != "correct"
        assert score_field("amount", str(a), longer).outcome != "correct"
        assert score_field("id", str(a), longer).outcome != "correct"


# ---------------------------------------------------------------- totality

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)
hostile_text = st.one_of(
    st.text(),
    st.binary().map(lambda b: b.decode("utf-8", errors="replace")),
    st.text(alphabet="0123456789.,-−()'$€£¥ %\u00a0\u202f/年月日", max_size=60),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=50, max_size=400),
)
_ENUM_OPTS = {"allowed": ["paid", "unpaid", "none"], "synonyms": {"settled": "paid"}}


def _check(fs: FieldScore, kind: str) -> None:
    assert isinstance(fs, FieldScore)
    assert fs.outcome in OUTCOMES
    assert fs.subcode is None or fs.subcode in SUBCODES[kind], fs


@SETTINGS
@given(kind=st.sampled_from(KINDS), pred=hostile_text, gold=st.sampled_from([None, "1234.50", "2024-03-14", "INV-2024-0042", "paid", "Acme Corp"]))
@pytest.mark.slow
def test_any_text_never_raises(kind: str, pred: str, gold: str | None) -> None:
    opts = _ENUM_OPTS if kind == "enum" else {}
    _check(score_field(kind, gold, pred, **opts), kind)
    _check(score_field(kind, pred, pred, **opts), kind)
    _check(score_field(kind, pred, gold, **opts), kind)


@SETTINGS
@given(kind=st.sampled_from(KINDS), pred=json_values)
@pytest.mark.slow
def test_any_json_value_never_raises(kind: str, pred: Any) -> None:
    opts = _ENUM_OPTS if kind == "enum" else {}
    _check(score_field(kind, "1234.50", pred, **opts), kind)
    _check(score_field(kind, None, pred, **opts), kind)


@pytest.mark.slow
def test_huge_and_odd_inputs() -> None:
    big = "EUR 1,234.50 " * 20000
    for kind in KINDS:
        for pred in (big, "9" * 50000, "\x00" * 1000, "(" * 5000, "1," * 20000, "\ud800bad", json.dumps([[[[1]]]])):
            _check(score_field(kind, "1234.50", pred), kind)
    fs = score_field("amount", "1", "1" + "0" * 5000)
    assert fs.outcome == "wrong_value" and fs.subcode == "scale_error"


# ---------------------------------------------------------------- reflexivity


@st.composite
def formatted_values(draw: Any) -> tuple[str, str]:
    kind = draw(st.sampled_from(["amount", "number", "date", "id", "text", "enum"]))
    if kind in ("amount", "number"):
        value, decimals = draw(amounts())
        text = format_number(value, decimals, draw(st.sampled_from(sorted(CONVENTIONS))))
        if kind == "amount":
            text = place_currency(text, draw(st.sampled_from(sorted(CURRENCIES))), draw(st.sampled_from(PLACEMENTS)))
        if kind == "number" and draw(st.booleans()):
            text += "%"
        return kind, text
    if kind == "date":
        d = draw(st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 12, 31)))
        fmt = draw(st.sampled_from(["%Y-%m-%d", "%d %B %Y", "%B %d, %Y", "%d/%m/%Y", "%d.%m.%Y", "%b %Y", "%Y-%m", "cjk"]))
        return kind, f"{d.year}年{d.month}月{d.day}日" if fmt == "cjk" else d.strftime(fmt)
    if kind == "id":
        parts = draw(st.lists(st.text(alphabet="ABCDEFGHJKXYZ0123456789", min_size=1, max_size=6), min_size=1, max_size=4))
        return kind, draw(st.sampled_from(["-", "/", " ", "", "."])).join(parts)
    text = draw(st.text(min_size=1, max_size=40))
    assume(not is_absent(text))
    return kind, text


@SETTINGS
@given(kv=formatted_values())
def test_value_scored_against_itself_is_correct(kv: tuple[str, str]) -> None:
    kind, value = kv
    opts = {"allowed": [value]} if kind == "enum" else {}
    fs = score_field(kind, value, value, **opts)
    assert fs.outcome == "correct", (kind, value, fs)
