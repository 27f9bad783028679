"""The needle pack is deterministic, sized in the model's tokens, and puts the needle where asked."""

from __future__ import annotations

import json

from evalrun.tasks import get_pack


def _count(text: str) -> int:
    # a stand-in counter for the pure pack logic: whitespace tokens
    return len(text.split())


def _build(**params):
    spec = get_pack("needle_numbers")
    return spec.build(spec.params(**params), _count)


def test_deterministic_and_seeded() -> None:
    a = [it.model_dump_json() for it in _build(lengths=[300], depths=[0.0, 1.0])]
    b = [it.model_dump_json() for it in _build(lengths=[300], depths=[0.0, 1.0])]
    c = [it.model_dump_json() for it in _build(lengths=[300], depths=[0.0, 1.0], seed=1)]
    assert a == b
    assert a != c


def test_grid_ids_and_fields() -> None:
    items = _build(lengths=[200, 400], depths=[0.0, 0.5, 1.0], values=["integer", "amount"])
    assert len(items) == 12
    assert len({it.id for it in items}) == 12
    for it in items:
        (field,) = it.fields
        if it.meta["value_kind"] == "integer":
            assert field.kind == "number" and len(field.gold) == 7 and field.gold.isdigit()
        else:
            assert field.kind == "amount" and field.gold.startswith("EUR ") and "." in field.gold


def test_length_close_to_target_and_needle_at_depth() -> None:
    for length in (200, 800):
        for depth in (0.0, 0.5, 1.0):
            (item,) = _build(lengths=[length], depths=[depth], values=["integer"])
            assert length * 0.9 <= item.meta["context_tokens"] <= length, item.meta
            body = item.prompt.split("\n\n")[1]
            pos = body.index(item.meta["needle"]) / max(1, len(body) - len(item.meta["needle"]))
            assert abs(pos - depth) < 0.1, (depth, pos)
            assert item.fields[0].gold in item.meta["needle"]


def test_haystack_has_no_digits_but_the_needle() -> None:
    (item,) = _build(lengths=[600], depths=[0.5], values=["integer"])
    body = item.prompt.replace(item.meta["needle"], "")
    assert not any(ch.isdigit() for ch in body)


def test_items_round_trip_as_json() -> None:
    for it in _build(lengths=[200], depths=[0.5]):
        assert json.loads(it.model_dump_json())["id"] == it.id
