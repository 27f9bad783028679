"""The batch plan without a model: by tokens (not characters), longest first, the fewest
padded tokens for as many batches as full ones would make, overrides never mixed, a seed
shuffles, ties by item id; and the padding tally's arithmetic."""

from __future__ import annotations

import itertools
import random

from evalrun.contract.types import GenerationOverride, Item
from evalrun.runners.batch_plan import PaddingTally, plan_batches, split_sizes


def _item(i: int, tokens: int, chars: int = 10, generation: GenerationOverride | None = None) -> Item:
    return Item(id=f"i{i:02d}", pack="p", prompt="x" * chars, fields=[], generation=generation,
                meta={"context_tokens": tokens})


def _tokens(it: Item) -> int:
    return it.meta.context_tokens or 0


def _cost(batches: list[list[Item]]) -> int:
    return sum(len(b) * max(_tokens(it) for it in b) for b in batches)


def _best_split(lengths: list[int], cap: int) -> int:
    """Exhaustive: the least padded cost over every split into ceil(n/cap) consecutive batches."""
    n, count = len(lengths), -(-len(lengths) // cap)
    best = None
    for sizes in itertools.product(range(1, cap + 1), repeat=count):
        if sum(sizes) == n:
            starts = itertools.accumulate((0,) + sizes[:-1])
            cost = sum(lengths[s] * k for s, k in zip(starts, sizes))
            best = cost if best is None else min(best, cost)
    assert best is not None
    return best


def test_batches_go_by_tokens_longest_first_not_by_characters() -> None:
    # the demo's trap: prompts of similar characters and very different tokens
    items = [_item(0, 1036, chars=2000), _item(1, 535, chars=2700), _item(2, 531, chars=2650),
             _item(3, 1044, chars=5500), _item(4, 1048, chars=5600), _item(5, 536, chars=2800),
             _item(6, 1053, chars=5400), _item(7, 530, chars=2600)]
    batches = plan_batches(items, _tokens, 4)
    assert [[it.id for it in b] for b in batches] == [["i06", "i04", "i03", "i00"], ["i05", "i01", "i02", "i07"]]
    by_chars = sorted(items, key=lambda it: len(it.prompt))
    assert _cost(batches) == 4 * 1053 + 4 * 536 < _cost([by_chars[:4], by_chars[4:]])


def test_the_split_pads_least_and_never_adds_a_batch() -> None:
    rng = random.Random(7)
    for _ in range(150):
        cap = rng.randint(1, 5)
        lengths = sorted((rng.randint(1, 60) for _ in range(rng.randint(1, 11))), reverse=True)
        sizes = split_sizes(lengths, cap)
        assert sum(sizes) == len(lengths) and max(sizes) <= cap and min(sizes) >= 1
        assert len(sizes) == -(-len(lengths) // cap)
        starts = itertools.accumulate([0] + sizes[:-1])
        assert sum(lengths[s] * k for s, k in zip(starts, sizes)) == _best_split(lengths, cap)
    # nothing to gain: plain chunks, the full ones first (lm-eval's batches)
    assert split_sizes([9, 9, 9, 9, 9], 2) == [2, 2, 1]
    # a long prompt on its own batch instead of padding three short ones up to it
    assert split_sizes([1000, 500, 500, 500, 500], 4) == [1, 4]
    assert split_sizes([], 4) == []


def test_overrides_never_share_a_batch_and_the_order_is_deterministic() -> None:
    fixed = GenerationOverride(max_new_tokens=5, ignore_eos=True)
    items = [_item(i, 100 - 10 * (i % 3), generation=fixed if i % 2 else None) for i in range(9)]
    batches = plan_batches(items, _tokens, 3)
    assert all(len({it.generation for it in b}) == 1 for b in batches)
    assert sorted(it.id for b in batches for it in b) == sorted(it.id for it in items)
    for b in batches:  # longest first within a group; equal lengths by item id
        assert [(-_tokens(it), it.id) for it in b] == sorted((-_tokens(it), it.id) for it in b)
    shuffled_input = random.Random(1).sample(items, len(items))
    assert plan_batches(shuffled_input, _tokens, 3) == batches


def test_a_seed_shuffles_into_other_batches_reproducibly() -> None:
    items = [_item(i, 10 + i) for i in range(12)]
    plain = plan_batches(items, _tokens, 4)
    seeded = plan_batches(items, _tokens, 4, seed=3)
    assert seeded != plain and [len(b) for b in seeded] == [4, 4, 4]
    assert plan_batches(list(reversed(items)), _tokens, 4, seed=3) == seeded
    assert plan_batches(items, _tokens, 4, seed=4) != seeded


def test_padding_tally_counts_rows_times_width_and_a_cached_prefix_once() -> None:
    tally = PaddingTally()
    tally.add(rows=3, width=10, real=24)  # 6 pad tokens
    tally.prefix(50)  # a document prefilled once for its questions
    tally.add(rows=2, width=58, real=110, cached=50)  # suffixes of 8 and 2 tokens padded to 8
    assert tally.record() == {"prompt_tokens": 134, "padded_prefill_tokens": 30 + 50 + 16,
                              "padding_share": round(12 / 96, 4)}
    assert PaddingTally().record()["padding_share"] == 0.0
