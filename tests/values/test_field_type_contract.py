"""The contract every field type keeps, checked for every type the registry finds
(src/evalrun/values/types/, one file each): a new type is covered the moment its file exists."""

from __future__ import annotations

import copy
import pkgutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from evalrun.evals.scoring import OUTCOMES, score_field
from evalrun.values.docs import DEFAULT_PATH, render
from evalrun.values.registry import field_type, option_problem, type_names, user_option_problem
from tests.conftest import ROOT

NAMES = type_names()


def _opts(options: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(options)  # each call its own dict, as a config gives it


def test_every_module_of_the_folder_is_one_registered_type() -> None:
    modules = [m.name for m in pkgutil.iter_modules([str(ROOT / "src" / "evalrun" / "values" / "types")]) if not m.name.startswith("_")]
    assert sorted(NAMES) == sorted(field_type(n).name for n in NAMES)
    assert len(NAMES) == len(modules), (NAMES, modules)
    assert {"amount", "number", "date", "id", "text", "enum"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_declarations_are_complete(name: str) -> None:
    t = field_type(name)
    assert t.doc and "\n" not in t.doc and t.rules.strip() and t.noun and t.hint
    assert t.subcodes and len(set(t.subcodes)) == len(t.subcodes)
    assert t.unparseable is None or t.unparseable in t.subcodes
    assert set(t.examples) <= set(t.subcodes), "an example for a sub-code the type does not declare"


@pytest.mark.parametrize("name", NAMES)
def test_gold_round_trip(name: str) -> None:
    """A gold read, formatted and read again (in the canonical options) is the same value."""
    t = field_type(name)
    golds = [(g, o) for g, o in t.golds] + [(e.gold, e.options) for es in t.examples.values() for e in es]
    assert t.golds, "declare golds that read"
    for gold, options in golds:
        value = t.gold(gold, t.options(options))
        assert value is not None, (gold, options)
        again = t.gold(t.fmt(value), t.canonical_options(t.options(options)))
        assert again == value, (gold, t.fmt(value), again)


@pytest.mark.parametrize("name", NAMES)
def test_candidates_never_fill_missing_parts(name: str) -> None:
    """An answer that does not give a part (a year, a currency, a unit) yields no value with it."""
    t = field_type(name)
    assert {part for _, part in t.partial_examples} == set(t.parts), "one example per declared part"
    for answer, part in t.partial_examples:
        cands = t.candidates(answer, t.options({}))
        assert cands, answer
        for c in cands:
            values = t.part_values(c)
            assert set(values) == set(t.parts)
            assert values[part] is None, (answer, part, c)


@pytest.mark.parametrize("name", NAMES)
def test_every_subcode_is_reachable(name: str) -> None:
    t = field_type(name)
    for sub in t.subcodes:
        assert t.examples.get(sub), f"{name}: no example earns {sub}"
        for ex in t.examples[sub]:
            fs = score_field(name, ex.gold, ex.pred, **_opts(ex.options))
            assert fs.subcode == sub and fs.outcome not in ("correct", "correct_absent"), (ex, fs)


@pytest.mark.parametrize("name", NAMES)
def test_options_are_validated(name: str) -> None:
    t = field_type(name)
    problem = user_option_problem(name, {"no_such_option": 1})
    assert problem is not None and problem[0] == "no_such_option" and f"not an option of {name} fields" in problem[1]
    assert user_option_problem(name, {"field": "total"}) is not None, "the scorer sets `field`, a config does not"
    for key in t.user_options():
        problem = option_problem(name, {key: object()})
        assert problem is not None and problem[0] == key, (key, problem)
        with pytest.raises(ValueError, match=key):
            score_field(name, "x", "x", **{key: object()})
    assert option_problem(name, {"no_such_option": object()}) is None  # metadata the type does not read


def _sentences(pred: str) -> list[str]:
    return [pred, f"The value is {pred}.", f"  {pred}  ", f"Answer: {pred}\nThat is all."]


@pytest.mark.parametrize("name", NAMES)
def test_spans_point_at_the_text_they_came_from(name: str) -> None:
    t = field_type(name)
    for ex in [e for es in t.examples.values() for e in es]:
        for s in _sentences(ex.pred):
            opts = t.options(ex.options)
            found = t.find(s, opts)
            assert set(t.candidates(s, opts)) <= {f.value for f in found}, (s, found)
            for f in found:
                assert 0 <= f.start < f.end <= len(s), (s, f)
                assert t.candidates(s[f.start:f.end], opts) == [f.value], (s, f, s[f.start:f.end])


_hostile = st.one_of(
    st.text(max_size=80),
    st.text(alphabet="0123456789.,-−()'$€£¥ %\u00a0\u202f/年月日kgtmlWhIBANDEUS", max_size=60),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=40, max_size=300),
)


@settings(max_examples=100, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(batch=st.lists(_hostile, min_size=100, max_size=100))
@pytest.mark.slow
def test_no_exception_on_fuzzed_strings(batch: list[str]) -> None:
    """10,000 strings (a fixed seed), each through every type: readers, spans and the scorer never raise."""
    for name in NAMES:
        t = field_type(name)
        gold, options = t.golds[0]
        for s in batch:
            opts = t.options(options)
            t.candidates(s, opts)
            for f in t.find(s, opts):
                assert 0 <= f.start <= f.end <= len(s)
            t.gold(s, opts)
            fs = score_field(name, gold, s, **_opts(options))
            assert fs.outcome in OUTCOMES and (fs.subcode is None or fs.subcode in t.subcodes), fs


def test_the_field_type_reference_is_current() -> None:
    """docs/field-types.md is what the registered types render: regenerate it with
    `python -m evalrun.values.docs` after changing a type."""
    assert DEFAULT_PATH == ROOT / "docs" / "field-types.md"
    assert Path(DEFAULT_PATH).read_text(encoding="utf-8") == render(), "run python -m evalrun.values.docs"
    text = render()
    for name in NAMES:
        t = field_type(name)
        assert f"## {name}" in text and all(f"`{s}`" in text for s in t.subcodes)
        assert all(f"`{k}`" in text for k in t.user_options())
