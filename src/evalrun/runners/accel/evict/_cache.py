"""The cache an eviction policy prunes: layers that hold fewer entries than the tokens they processed.

Why its length and mask offset differ, and why one sequence at a time: _policy.py.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer

from evalrun.runners.accel.kv_layout import KVLayout


class EvictingLayer(DynamicLayer):
    """A layer that may hold fewer entries than the tokens it has processed."""

    keys: torch.Tensor | None  # DynamicLayer's (transformers is not analysed by mypy: pyproject)
    values: torch.Tensor | None

    def __init__(self) -> None:
        super().__init__()
        self.cumulative_length = 0  # tokens processed, evicted or not
        self.compressed = False

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        self.cumulative_length += key_states.shape[-2]
        return super().update(key_states, value_states, *args, **kwargs)

    def stored(self) -> int:
        return 0 if not self.is_initialized or self.keys is None or self.keys.dim() != 4 else self.keys.shape[-2]

    def get_seq_length(self) -> int:
        # positions and cache_position continue from the tokens processed, not those kept
        return self.cumulative_length

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        stored = self.stored()
        # kept entries sit just before the new tokens in the mask; all are in the past, so causality holds
        return stored + query_length, self.cumulative_length - stored

    def crop(self, tokens_to_remove: int) -> None:
        raise RuntimeError("an evicting KV cache cannot be rolled back (not combinable with speculative decoding)")

    def keep(self, index: torch.Tensor) -> None:
        """Keep the entries at `index` ([batch, kv heads, kept], sorted) of every head."""
        if self.keys is None or self.values is None:
            raise RuntimeError("an evicting KV cache layer was asked to evict before it stored anything")
        gather = index.unsqueeze(-1).expand(-1, -1, -1, self.keys.shape[-1])
        self.keys = torch.gather(self.keys, 2, gather).contiguous()
        self.values = torch.gather(self.values, 2, gather).contiguous()
        self.compressed = True


class EvictingCache(Cache):
    """One EvictingLayer per decoder layer."""

    def __init__(self, config: Any):
        text = config.get_text_config(decoder=True)
        super().__init__(layers=[EvictingLayer() for _ in range(text.num_hidden_layers)])

    def evicting_layers(self) -> list[EvictingLayer]:
        """The layers built above, typed as such (Cache declares its layers as any kind of layer)."""
        return [layer for layer in self.layers if isinstance(layer, EvictingLayer)]


def cache_bytes_kept(cache: EvictingCache, elem: int) -> tuple[int, int]:
    """(bytes held, bytes a full cache would hold)."""
    held = full = 0
    for layer in cache.evicting_layers():
        stored = layer.stored()
        if stored and layer.keys is not None:
            batch, heads, _, dim = layer.keys.shape
            one_layer = KVLayout(1, heads, dim)
            held += one_layer.bytes(stored, elem, batch=batch)
            full += one_layer.bytes(layer.cumulative_length, elem, batch=batch)
    return held, full
