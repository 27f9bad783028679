"""Tests for evals.scoring.parse_json_answer: the fixed parse order, the
truncation suspect, and that no input makes it raise."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalrun.evals.scoring import PARSE_STATUSES, JsonAnswer, parse_json_answer

SETTINGS = settings(
    max_examples=int(os.environ.get("FIELDS_HYPOTHESIS_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

CASES = [
    # id, text, status, data, suspect_key
    ("strict", '{"a": 1, "b": "x"}', "strict", {"a": 1, "b": "x"}, None),
    ("strict-whitespace", '\n  {"a": [1, 2]}  \n', "strict", {"a": [1, 2]}, None),
    ("strict-bom", '\ufeff{"a": 1}', "strict", {"a": 1}, None),
    ("fenced-json", 'Sure!\n```json\n{"total": "EUR 14,851.20"}\n```\nHope this helps.', "fenced", {"total": "EUR 14,851.20"}, None),
    ("fenced-no-lang", '```\n{"a": 1}\n```', "fenced", {"a": 1}, None),
    ("fenced-JSON-upper", '```JSON\n{"a": 1}\n```', "fenced", {"a": 1}, None),
    ("first-object-in-prose", 'Here is the answer: {"a": 1} as requested.', "fenced", {"a": 1}, None),
    ("first-of-two-objects", '{"a": 1}\n{"b": 2}', "fenced", {"a": 1}, None),
    ("braces-in-prose-first", 'Use {name} then {"a": 1}', "fenced", {"a": 1}, None),
    ("object-inside-array", '[{"a": 1}]', "fenced", {"a": 1}, None),
    ("quoted-brace-in-string", 'x {"a": "}{"} y', "fenced", {"a": "}{"}, None),
    ("trailing-comma", '{"a": 1, "b": [1, 2,],}', "repaired", {"a": 1, "b": [1, 2]}, None),
    ("single-quotes", "{'a': 'x', 'b': 2}", "repaired", {"a": "x", "b": 2}, None),
    ("python-literals", "{'a': None, 'b': True, 'c': False}", "repaired", {"a": None, "b": True, "c": False}, None),
    ("unquoted-keys", '{total: "EUR 5", due_date: "2024-03-14"}', "repaired", {"total": "EUR 5", "due_date": "2024-03-14"}, None),
    ("smart-quotes", "{\u201ctotal\u201d: \u201cEUR 5\u201d}", "repaired", {"total": "EUR 5"}, None),
    ("comments", '{\n  // the total\n  "a": 1 /* eur */\n}', "repaired", {"a": 1}, None),
    ("missing-comma", '{"a": 1\n "b": 2}', "repaired", {"a": 1, "b": 2}, None),
    ("fenced-needing-repair", "```json\n{'a': 1,}\n```", "repaired", {"a": 1}, None),
    ("newline-in-string", '{"a": "line1\nline2"}', "repaired", {"a": "line1\nline2"}, None),
    ("truncated-in-string", '{"total": "EUR 14,851.20", "supplier": "Acme Cor', "truncated", {"total": "EUR 14,851.20", "supplier": "Acme Cor"}, "supplier"),
    ("truncated-number", '{"a": "x", "total": 14851', "truncated", {"a": "x", "total": 14851}, "total"),
    ("truncated-number-dot", '{"total": 14851.', "truncated", {"total": 14851}, "total"),
    ("truncated-after-colon", '{"a": 1, "b":', "truncated", {"a": 1, "b": None}, "b"),
    ("truncated-after-key", '{"a": 1, "b"', "truncated", {"a": 1, "b": None}, "b"),
    ("truncated-inside-key", '{"a": 1, "bc', "truncated", {"a": 1}, None),
    ("truncated-after-comma", '{"a": 1,', "truncated", {"a": 1}, None),
    ("truncated-after-value", '{"a": "x"', "truncated", {"a": "x"}, None),
    ("truncated-literal", '{"a": 1, "paid": tr', "truncated", {"a": 1, "paid": True}, "paid"),
    ("truncated-in-array", '{"a": 1, "items": ["x", "y', "truncated", {"a": 1, "items": ["x", "y"]}, "items"),
    ("truncated-nested-object", '{"items": [{"name": "Wid', "truncated", {"items": [{"name": "Wid"}]}, "name"),
    ("truncated-open-list", '{"a": 1, "items": ["x", ', "truncated", {"a": 1, "items": ["x"]}, "items"),
    ("truncated-open-object", '{"vendor": {"name": "Acme", ', "truncated", {"vendor": {"name": "Acme"}}, "vendor"),
    ("truncated-list-of-objects", '{"items": [{"sku": "A1"}, ', "truncated", {"items": [{"sku": "A1"}]}, "items"),
    ("truncated-closed-nested", '{"a": {"b": 1}, "c": [1, 2], ', "truncated", {"a": {"b": 1}, "c": [1, 2]}, None),
    ("truncated-unclosed-fence", '```json\n{"total": "EUR 5", "date": "2024-03-1', "truncated", {"total": "EUR 5", "date": "2024-03-1"}, "date"),
    ("truncated-single-quotes", "{'a': 'x', 'b': 'y", "truncated", {"a": "x", "b": "y"}, "b"),
    ("truncated-escape", '{"a": "x\\', "truncated", {"a": "x"}, "a"),
    ("truncated-unicode-escape", '{"a": "x\\u00', "truncated", {"a": "x"}, "a"),
    ("truncated-minus", '{"a": -', "truncated", {"a": None}, "a"),
    ("failed-prose", "The total is EUR 14,851.20.", "failed", None, None),
    ("failed-empty", "", "failed", None, None),
    ("failed-open-brace-only", "I think {", "failed", None, None),
    ("failed-cut-in-first-key", '{"ab', "failed", None, None),
    ("failed-array", "[1, 2, 3]", "failed", None, None),
    ("failed-scalar", "42", "failed", None, None),
    ("double-encoded", '"{\\"a\\": 1}"', "repaired", {"a": 1}, None),
    ("failed-string", '"just text"', "failed", None, None),
]


@pytest.mark.parametrize(("text", "status", "data", "suspect"), [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_cases(text: str, status: str, data: dict[str, Any] | None, suspect: str | None) -> None:
    ans = parse_json_answer(text)
    assert (ans.status, ans.data, ans.suspect_key) == (status, data, suspect)


def test_inner_object_of_truncated_answer_is_not_the_answer() -> None:
    ans = parse_json_answer('{"vendor": {"name": "Acme"}, "total": "EUR 5')
    assert ans.status == "truncated"
    assert ans.data == {"vendor": {"name": "Acme"}, "total": "EUR 5"}
    assert ans.suspect_key == "total"


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        "{" * 100_000,
        '{"a":' * 50_000,
        "}" * 1000 + "{" * 1000,
        '"' * 10_001,
        "\\" * 10_001,
        "```" * 5000,
        "```json\n" * 1000,
        "\x00\x01\x02{\x03",
        "{\ud800: \udfff}",
        '{"a": "\ud83d\ude00"}',
        "{'a': 'it's'}",
        "{" + '"k": 1, ' * 100_000,
        "x" * 1_000_000,
        "{/*",
        "{//",
        "{a:b:c:d}",
        '{"a": 1e99999}',
        '{"a": NaN, "b": -Infinity}',
    ],
    ids=lambda t: repr(t[:12]),
)
@pytest.mark.slow
def test_hostile_inputs_never_raise(text: str) -> None:
    ans = parse_json_answer(text)
    assert isinstance(ans, JsonAnswer) and ans.status in PARSE_STATUSES
    assert ans.data is None or isinstance(ans.data, dict)


@pytest.mark.parametrize("value", [None, 42, 3.5, b'{"a": 1}', bytearray(b"\xff\xfe{"), ["x"], {"a": 1}])
def test_non_string_inputs(value: Any) -> None:
    ans = parse_json_answer(value)
    assert ans.status in PARSE_STATUSES
    if isinstance(value, bytes):
        assert ans.status == "strict" and ans.data == {"a": 1}


@SETTINGS
@given(st.one_of(st.text(), st.binary().map(lambda b: b.decode("utf-8", errors="replace")),
                 st.text(alphabet='{}[]",:\'\\ aN1-.tTfn\n`/*', max_size=80)))
def test_any_text_never_raises(text: str) -> None:
    ans = parse_json_answer(text)
    assert ans.status in PARSE_STATUSES
    assert (ans.data is None) == (ans.status == "failed")
    assert ans.suspect_key is None or ans.status == "truncated"


json_scalars = st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=10)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=6)


@SETTINGS
@given(obj=json_objects, indent=st.sampled_from([None, 2]))
@pytest.mark.slow
def test_valid_object_is_strict_and_fenced(obj: dict[str, Any], indent: int | None) -> None:
    text = json.dumps(obj, indent=indent, ensure_ascii=False)
    assert parse_json_answer(text) == JsonAnswer(status="strict", data=obj)
    fenced = parse_json_answer(f"Here you go:\n```json\n{text}\n```\n")
    assert fenced == JsonAnswer(status="fenced", data=obj)


@SETTINGS
@given(
    obj=st.dictionaries(st.text(max_size=8), json_scalars, min_size=1, max_size=6),
    cut=st.floats(0, 1, exclude_max=True),
    indent=st.sampled_from([None, 2]),
    ascii_=st.booleans(),
)
def test_truncated_flat_object_keeps_every_value_but_the_suspect(
    obj: dict[str, Any], cut: float, indent: int | None, ascii_: bool
) -> None:
    text = json.dumps(obj, indent=indent, ensure_ascii=ascii_)
    text = text[: 1 + int(cut * (len(text) - 2))]  # always cut before the closing brace
    ans = parse_json_answer(text)
    assert ans.status in ("truncated", "failed"), (text, ans)
    if ans.status == "truncated":
        assert ans.data
        for k, v in ans.data.items():
            assert k in obj, (text, ans)
            if k != ans.suspect_key:
                assert v == obj[k], (text, ans, k)


simple_text = st.text(alphabet="abcXYZ019 _-.,:{}[]", max_size=12)
python_scalars = st.none() | st.booleans() | st.integers(-10**9, 10**9) | simple_text


@SETTINGS
@given(obj=st.dictionaries(simple_text, python_scalars | st.lists(python_scalars, max_size=3), min_size=1, max_size=5))
def test_python_repr_is_repaired(obj: dict[str, Any]) -> None:
    ans = parse_json_answer(f"Result: {obj!r}")
    assert ans.data == obj, (repr(obj), ans)
    assert ans.status in ("fenced", "repaired")  # fenced when the repr happens to be JSON
