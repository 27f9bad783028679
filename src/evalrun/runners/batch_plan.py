"""Static batches planned by prompt tokens: the hf runner's batch plan and the interleaved re-timing's sample of it (one
planner, so the two cannot drift apart).

A left-padded batch's prefill costs its size times its longest prompt, and sorting by characters mixes token counts (a
535-token prompt beside a 1,036-token one pads ~500 tokens a row), so the plan sorts by tokens, longest first (lm-eval's
order: an out-of-memory error comes on the first batch), then cuts as many batches as full ones would make, the short
ones where they pad least. Items with different generation overrides never share a batch; a seed shuffles items into
other batches. Ties in length go by item id."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from evalrun.contract.types import GenerationOverride, Item

PLAN = "tokens, longest first, least padding"  # the manifest's batching.plan
PLAN_KEY = "tokens-desc-min-padding"  # in the hf run key: batch composition changes outputs
SHUFFLED = "shuffled"


def split_sizes(lengths: list[int], cap: int) -> list[int]:
    """Sizes of consecutive batches over `lengths` (sorted longest first, each batch at most `cap`): as many batches as
    `ceil(n / cap)`, with the fewest padded tokens (sum of size x first length) among such splits; on a tie the fuller
    batch comes first, so a split with nothing to gain is plain chunks of `cap`. Dynamic programming over the slack (the
    ceil(n / cap) * cap - n missing rows): O(batches x slack^2)."""
    n = len(lengths)
    if n == 0:
        return []
    cap = max(1, cap)
    count = -(-n // cap)
    slack = count * cap - n
    # rest[k][j]: least cost of batches k.. when j rows of slack are used by batches before k
    rest = [[0] * (slack + 1) for _ in range(count + 1)]
    rest[count] = [0 if j == slack else -1 for j in range(slack + 1)]
    for k in range(count - 1, -1, -1):
        for j in range(slack + 1):
            start = k * cap - j
            if not 0 <= start < n:
                rest[k][j] = -1  # not a reachable state
                continue
            options = [lengths[start] * (cap - d) + rest[k + 1][j + d]
                       for d in range(slack - j + 1) if rest[k + 1][j + d] >= 0]
            rest[k][j] = min(options) if options else -1
    sizes, used = [], 0
    for k in range(count):
        start = k * cap - used
        d = next(d for d in range(slack - used + 1)
                 if rest[k + 1][used + d] >= 0 and lengths[start] * (cap - d) + rest[k + 1][used + d] == rest[k][used])
        sizes.append(cap - d)
        used += d
    return sizes


def plan_batches(items: Iterable[Item], tokens: Callable[[Item], int], batch_size: int,
                 seed: int | None = None) -> list[list[Item]]:
    """The run's batches: by `tokens` (the rendered prompt's length), longest first, at most
    `batch_size` each; with a `seed`, the items shuffled into batches of `batch_size`."""
    size = max(1, batch_size)
    items = list(items)
    length = {it.id: tokens(it) for it in items} if seed is None else {}
    ordered = sorted(items, key=lambda it: (-length.get(it.id, 0), it.id))
    if seed is not None:
        ordered.sort(key=lambda it: it.id)
        random.Random(seed).shuffle(ordered)
    groups: dict[GenerationOverride | None, list[Item]] = {}
    for it in ordered:
        groups.setdefault(it.generation, []).append(it)
    out: list[list[Item]] = []
    for group in groups.values():
        sizes = split_sizes([length[it.id] for it in group], size) if seed is None else [size] * -(-len(group) // size)
        out.extend(group[a:b] for a, b in itertools.pairwise([0, *itertools.accumulate(sizes)]))
    return out


@dataclass
class PaddingTally:
    """What prefill really computed, counted where batches are generated (after any split)."""

    prompt_tokens: int = 0  # the prompts' own tokens
    padded_prefill_tokens: int = 0  # rows x width of each batch (less a prefix already cached), prefixes once
    pad_tokens: int = 0  # of those, padding

    def add(self, rows: int, width: int, real: int, cached: int = 0) -> None:
        """One generated batch: `rows` prompts left-padded to `width` tokens, `real` of them
        prompt tokens, the first `cached` of each row already in a shared prefix's cache."""
        self.prompt_tokens += real
        self.padded_prefill_tokens += rows * (width - cached)
        self.pad_tokens += rows * width - real

    def prefix(self, tokens: int) -> None:
        """A shared prefix prefilled once for all its questions."""
        self.padded_prefill_tokens += tokens

    def record(self) -> dict[str, Any]:
        share = self.pad_tokens / self.padded_prefill_tokens if self.padded_prefill_tokens else 0.0
        return {"prompt_tokens": self.prompt_tokens, "padded_prefill_tokens": self.padded_prefill_tokens,
                "padding_share": round(share, 4)}


@dataclass
class WorkUnit:
    """Batches generated together: one planned batch, or a document's questions after its shared
    prefix (`prefix`: its token ids, prefilled once). Planned where the run is driven, so the
    outputs do not depend on which process or Ray actor generates the unit."""

    batches: list[list[Item]]
    prefix: list[int] | None = None

    @property
    def items(self) -> list[Item]:
        return [it for batch in self.batches for it in batch]
