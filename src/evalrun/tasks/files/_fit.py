"""Fitting a `files` document into the context, counting slices only until past the budget (cost bounded by it)."""

from __future__ import annotations

import string

from evalrun.contract.types import Truncation
from evalrun.tasks.base import PackDataError, TokenCounter

CHARS_PER_SLICE_TOKEN = 8  # a slice holds this many characters per token of the budget
MIN_SLICE = 4096


def count_within(text: str, count: TokenCounter, limit: int) -> int | None:
    """`text`'s exact token count when at most `limit`, else None, tokenizing about `limit` tokens' worth at most."""
    if limit < 0:
        return None
    step = max(MIN_SLICE, limit * CHARS_PER_SLICE_TOKEN)
    if len(text) <= step:
        n = count(text)
        return n if n <= limit else None
    total = slices = 0
    for start in range(0, len(text), step):
        total += count(text[start:start + step])
        slices += 1
        if total > limit + slices:  # a slice boundary can split a token: allow one per slice
            return None
    n = count(text)  # it may fit (very compressible text): the exact count decides
    return n if n <= limit else None


def _longest_placeholder(template: str, row: dict[str, str]) -> str | None:
    names = {f.split(".")[0].split("[")[0] for _, f, _, _ in string.Formatter().parse(template) if f}
    present = [n for n in names if n in row]
    return max(present, key=lambda n: len(row[n]), default=None)


def cut_to_fit(templates: list[str], source: str, row: dict[str, str], count: TokenCounter, room: int,
               where: str, key: str) -> tuple[dict[str, str], Truncation]:
    """(the row with `source`'s longest column cut, what was cut): the longest prefix (bisection) with which every
    template fits `room`; one cut for all, so every question about a document sees the same document."""
    column = _longest_placeholder(source, row)
    if column is None:
        raise PackDataError(f"{where}: the prompt does not fit the model's context and has no column to cut", key)
    empty = {**row, column: ""}
    sizes = [count_within(t.format_map(empty), count, room) for t in templates]
    if any(n is None for n in sizes):
        raise PackDataError(f"{where}: the prompt does not fit the model's context even without its document", key)
    # the longest first: a cut that is still too long fails on its first count
    ordered = [t for _, t in sorted(zip(sizes, templates), key=lambda p: -(p[0] or 0))]

    def fits(value: str) -> bool:
        cut = {**row, column: value}
        return all(count_within(t.format_map(cut), count, room) is not None for t in ordered)

    value = row[column]
    lo, hi = 0, len(value)  # lo always fits; hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(value[:mid]):
            lo = mid
        else:
            hi = mid
    return {**row, column: value[:lo]}, {"column": column, "chars_kept": lo, "chars": len(value)}


def truncate_to_fit(prompt_t: str, system_t: str | None, row: dict[str, str], count: TokenCounter,
                    max_tokens: int, where: str) -> tuple[str, str | None, Truncation]:
    """(prompt, system, what was cut) for a whole-prompt template cut so prompt and system fit `max_tokens`."""
    system = system_t.format_map(row) if system_t else None
    room = max_tokens - (count(system) if system else 0)
    cut, info = cut_to_fit([prompt_t], prompt_t, row, count, room, where, "prompt")
    return prompt_t.format_map(cut), system, info
