"""Shared-prefix reuse: several questions about one document share its KV.

The document is prefilled once; each batch of its questions gets a copy of that cache (generate mutates
what it is given), and its suffixes are padded between the document and the question, where the mask hides
the padding and positions continue from the document, so each row computes what it would alone.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from evalrun.contract.types import CONTEXT_SEPARATOR, Item


@dataclass
class SharedPrefix:
    """A document's token ids and its prefilled cache, shared by `questions` items."""

    ids: list[int]
    cache: Any
    seconds: float
    questions: int

    def cache_for(self, batch: int) -> Any:
        cache = copy.deepcopy(self.cache)
        if batch > 1:
            cache.batch_repeat_interleave(batch)
        return cache

    def inputs(self, full_ids: list[list[int]], pad_id: int, device: str) -> dict[str, torch.Tensor]:
        """Rows of prefix + padding + suffix with the matching attention mask."""
        n = len(self.ids)
        suffixes = [ids[n:] for ids in full_ids]
        width = max(len(s) for s in suffixes)
        rows, masks = [], []
        for suffix in suffixes:
            pad = width - len(suffix)
            rows.append(self.ids + [pad_id] * pad + suffix)
            masks.append([1] * n + [0] * pad + [1] * len(suffix))
        return {"input_ids": torch.tensor(rows, device=device), "attention_mask": torch.tensor(masks, device=device)}


def group_by_prefix(
    items: list[Item], tokens_and_split: Callable[[Item], tuple[list[int], int | None]], min_tokens: int = 16
) -> tuple[list[tuple[list[int], list[Item]]], list[Item]]:
    """(groups of at least two items sharing the tokens before their question, the other items);
    `tokens_and_split` cuts where the item's own `context` ends, so only items that give one group."""
    groups: dict[tuple[int, ...], list[Item]] = {}
    alone: list[Item] = []
    for item in items:
        ids, at = tokens_and_split(item)
        if at is None or at < min_tokens:
            alone.append(item)
            continue
        groups.setdefault(tuple(ids[:at]), []).append(item)
    shared = [(list(prefix), members) for prefix, members in groups.items() if len(members) > 1]
    alone += [members[0] for members in groups.values() if len(members) == 1]
    return shared, alone


def prefill(model: Any, ids: list[int], device: str, cache_kwarg: str) -> SharedPrefix:
    """Run the document once into a fresh cache."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    start = time.perf_counter()
    with torch.no_grad():
        tensor = torch.tensor([ids], device=device)
        model(input_ids=tensor, attention_mask=torch.ones_like(tensor), use_cache=True, **{cache_kwarg: cache})
    if device == "cuda":
        torch.cuda.synchronize()
    return SharedPrefix(ids, cache, time.perf_counter() - start, 0)


def split_at_question(text: str, item: Item, offsets: list[tuple[int, int]]) -> int | None:
    """Index of the first token of the item's question in the rendered `text`, from the context the item gives
    (never guessed from its wording): after the context and separator in the last copy of the whole prompt (the
    chat template's last message). None: no context, or a template that rewrote the prompt (the method then
    sees the whole prompt at once)."""
    if not item.context:
        return None
    start = text.rfind(item.prompt)
    if start < 0:
        return None
    at = start + len(item.context) + len(CONTEXT_SEPARATOR)
    split = next((i for i, (begin, _) in enumerate(offsets) if begin >= at), None)
    return split if split else None
