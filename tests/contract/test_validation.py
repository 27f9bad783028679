"""One wording for key paths and pydantic errors, whichever stage's model refused its input."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrun.contract.validation import error_message, first_error, key_path, model_at

ROOT = Path(__file__).resolve().parents[2]


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bits: int = Field(4, gt=0)
    mode: Literal["a", "b"] = "a"


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    parts: list[Inner] = []
    by_name: dict[str, Inner] = {}


@pytest.mark.parametrize(("parts", "path"), [
    ((), ""), (("a",), "a"), (("a", "b", 0, "c"), "a.b[0].c"), (("tasks", 2), "tasks[2]"),
    (("flag", True), "flag.True"),  # a bool key is a key, not an index
])
def test_key_path(parts: tuple, path: str) -> None:
    assert key_path(parts) == path


def _first(data: dict, **kw) -> tuple[str, str]:
    with pytest.raises(ValidationError) as exc:
        Outer.model_validate(data)
    return first_error(exc.value, Outer, **kw)


@pytest.mark.parametrize(("data", "path", "message"), [
    ({}, "name", "required key is missing"),
    ({"name": "x", "colour": 1}, "colour", "unknown key; allowed: by_name, name, parts"),
    ({"name": "x", "parts": [{}, {"bitz": 2}]}, "parts[1].bitz", "unknown key; allowed: bits, mode"),
    ({"name": "x", "by_name": {"k": {"bitz": 2}}}, "by_name.k.bitz", "unknown key; allowed: bits, mode"),
    ({"name": "x", "parts": [{"mode": "c"}]}, "parts[0].mode", "invalid value 'c'; allowed: 'a' or 'b'"),
    ({"name": "x", "parts": [{"bits": 0}]}, "parts[0].bits", "Input should be greater than 0 (got 0)"),
])
def test_first_error_names_the_key_path_in_the_loaders_words(data: dict, path: str, message: str) -> None:
    assert _first(data) == (path, message)


def test_the_refused_input_can_be_left_out() -> None:
    assert _first({"name": "x", "parts": [{"bits": 0}]}, show_input=False)[1] == "Input should be greater than 0"


def test_a_mapping_or_list_input_is_never_quoted() -> None:
    assert error_message({"type": "int_type", "msg": "Input should be a valid integer", "input": [1] * 999}) \
        == "Input should be a valid integer"


def test_model_at_follows_lists_and_dicts() -> None:
    assert model_at(Outer, ()) is Outer
    assert model_at(Outer, ("parts", 0)) is Inner
    assert model_at(Outer, ("by_name", "k")) is Inner
    assert model_at(Outer, ("nope",)) is None


def test_no_other_module_words_a_pydantic_error_itself() -> None:
    """`exc.errors()[0]` read by hand is how the wordings drifted apart: only the contract's formatter does it."""
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "src" / "evalrun").rglob("*.py")
                 if p.name != "validation.py" and re.search(r"\.errors\(\)\[0\]", p.read_text(encoding="utf-8"))]
    assert offenders == []
