"""An answer of any length costs bounded time (issue 43, 8a): a server ignoring
`max_tokens` or an imported log can hand the scorer a megabyte; it reads the first
ANSWER_MAX_CHARS characters, says so in the FieldScore, and every reader is linear."""

from __future__ import annotations

import time

import pytest

from evalrun.contract.types import Field, Generation, Item
from evalrun.evals.scoring import ANSWER_MAX_CHARS, score_field, score_item
from evalrun.values.enums import find_enum_values
from evalrun.values.types.quantity import Quantity

MB = 1_000_000
GOLDS = {"amount": "EUR 14875", "number": "5", "date": "2024-03-14", "id": "INV-1", "percent": "19",
         "quantity": "5 kg", "text": "x", "checked_id": "DE89370400440532013000", "enum": "EUR"}
CONTEXT = "Net: EUR 12,500.00\nTotal: EUR 14,875.00\n\nQuestion: What is the total?"
# runs a broken generation is made of; the last three were the slowest shapes (non-ASCII spans, enum names)
SHAPES = ["1", "1,234,", " ", "EUR ", "2024-03-14 ", "a", "€1", "1’", "EUR 1 "]
LIMIT_S = 5.0  # generous for a loaded machine: before the cap, several of these ran for minutes


def _run(unit: str, n: int = MB) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _score(kind: str, answer: str) -> object:
    opts = {"allowed": ["EUR", "USD"]} if kind == "enum" else {}
    return score_field(kind, GOLDS[kind], answer, field="total", context=CONTEXT, **opts)


@pytest.mark.parametrize("unit", SHAPES)
def test_a_megabyte_answer_scores_in_bounded_time_and_says_it_was_cut(unit: str) -> None:
    answer = _run(unit)
    for kind in GOLDS:
        t = time.perf_counter()
        s = _score(kind, answer)
        took = time.perf_counter() - t
        assert took < LIMIT_S, (unit, kind, took)
        # the bound is on work: the verdict is the one of the first ANSWER_MAX_CHARS characters
        head = _score(kind, answer[:ANSWER_MAX_CHARS])
        assert (s.outcome, s.subcode, s.pred_norm) == (head.outcome, head.subcode, head.pred_norm), (unit, kind)
        assert s.detail is not None and f"first {ANSWER_MAX_CHARS:,} of {MB:,} characters" in s.detail


def test_an_answer_within_the_cap_is_read_whole_and_not_flagged() -> None:
    answer = "The total is EUR 14,875.00. " + "x" * (ANSWER_MAX_CHARS - 40)
    s = score_field("amount", "EUR 14875", answer, field="total")
    assert s.outcome == "correct" and "characters" not in (s.detail or "")


def test_enum_names_are_found_in_linear_time() -> None:
    # every mention used to be checked against every earlier one, and the word before it re-split
    text = _run("eur ", MB).strip()
    t = time.perf_counter()
    assert find_enum_values(text, {"eur": "eur", "usd": "usd", "not eur": "usd"}) == ["eur"]
    assert time.perf_counter() - t < LIMIT_S


def test_value_spans_in_non_ascii_text_are_placed_in_linear_time() -> None:
    # each span mapped back to the model's text rebuilt the whole offset table
    text = _run("€1 ", 200_000)
    t = time.perf_counter()
    found = Quantity().find(text, Quantity().options({}))
    assert time.perf_counter() - t < LIMIT_S
    assert found and text[found[0].start:found[0].end].strip() in ("€1", "1")


@pytest.mark.parametrize("unit", ['"', "{", "1,234,", '"a", '])
def test_a_megabyte_json_answer_is_read_to_the_cap_and_marked_truncated(unit: str) -> None:
    item = Item(id="j/1", pack="j", prompt="Total: EUR 5\n\nGive the total as JSON.", answer_format="json",
                fields=[Field(name="total", kind="amount", gold="EUR 5")])
    output = '{"total": "EUR 5", "note": ' + _run(unit)
    t = time.perf_counter()
    scored = score_item(item, Generation(item_id=item.id, pack=item.pack, prompt_hash="h", output=output))
    assert time.perf_counter() - t < LIMIT_S
    assert scored.parse_status == "truncated" and scored.fields["total"].outcome == "correct"
