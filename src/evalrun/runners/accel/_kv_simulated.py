"""Simulated low-bit KV cache: round-trip the cached keys and values in the KIVI layout, so any bit width from
2 to 8 can be explored where the quanto and hqq backends offer only a few (docs/accelerations.md).

As in transformers' QuantizedCache, the prefill attention sees full precision and the stored prompt is
quantized afterwards. The saving is simulated (values are stored dequantized); the bytes real storage would
take are reported.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer

from evalrun.runners.accel.kv_layout import KVLayout

SCALE_BITS = 32  # a 16-bit scale and a 16-bit zero point per group


def fake_quantize(x: torch.Tensor, bits: int, dim: int, group: int) -> torch.Tensor:
    """Asymmetric min-max round trip of `x` in groups of `group` along `dim`."""
    if x.numel() == 0:
        return x
    moved = x.movedim(dim, -1)
    n = moved.shape[-1]
    pad = (-n) % group
    if pad:
        moved = torch.nn.functional.pad(moved, (0, pad), mode="replicate")
    grouped = moved.reshape(*moved.shape[:-1], -1, group).float()
    lo = grouped.amin(dim=-1, keepdim=True)
    hi = grouped.amax(dim=-1, keepdim=True)
    levels = 2**bits - 1
    scale = ((hi - lo) / levels).clamp(min=torch.finfo(torch.float32).tiny)
    q = torch.round((grouped - lo) / scale).clamp(0, levels)
    out = (q * scale + lo).reshape(*moved.shape)[..., :n].to(x.dtype)
    return out.movedim(-1, dim)


class SimulatedQuantLayer(DynamicLayer):
    """A full-precision layer whose entries older than the residual window are round-tripped."""

    def __init__(self, bits: int, group_size: int, residual_length: int):
        super().__init__()
        self.bits = bits
        self.group_size = group_size
        self.residual_length = residual_length
        self.keys_done = 0  # tokens whose keys were round-tripped (whole groups only)
        self.values_done = 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        keys, values = super().update(key_states, value_states, *args, **kwargs)
        seq = keys.shape[-2]
        old = max(0, seq - self.residual_length)
        key_upto = (old // self.group_size) * self.group_size
        if key_upto > self.keys_done or old > self.values_done:
            # store round-tripped copies; the tensors returned for this step stay as computed
            new_keys, new_values = keys.clone(), values.clone()
            if key_upto > self.keys_done:
                span = slice(self.keys_done, key_upto)
                new_keys[..., span, :] = fake_quantize(keys[..., span, :], self.bits, dim=-2, group=self.group_size)
                self.keys_done = key_upto
            if old > self.values_done:
                span = slice(self.values_done, old)
                group = min(self.group_size, values.shape[-1])
                new_values[..., span, :] = fake_quantize(values[..., span, :], self.bits, dim=-1, group=group)
                self.values_done = old
            self.keys, self.values = new_keys, new_values
        return keys, values


class SimulatedQuantCache(Cache):
    """A cache of SimulatedQuantLayers, one per decoder layer."""

    def __init__(self, config: Any, bits: int, group_size: int, residual_length: int):
        text = config.get_text_config(decoder=True)
        super().__init__(layers=[SimulatedQuantLayer(bits, group_size, residual_length)
                                 for _ in range(text.num_hidden_layers)])
        self.bits = bits
        self.group_size = group_size
        self.residual_length = residual_length

    def quant_layers(self) -> list[SimulatedQuantLayer]:
        """The layers built above, typed as such (Cache declares its layers as any kind of layer)."""
        return [layer for layer in self.layers if isinstance(layer, SimulatedQuantLayer)]


def layer_bytes(layer: SimulatedQuantLayer, cache: SimulatedQuantCache, heads: int, head_dim: int, batch: int,
                elem: int) -> tuple[int, int, int, int]:
    """(bytes a real KIVI store would hold, full-precision bytes, cached tokens, full-precision residual
    tokens) of one layer."""
    if not getattr(layer, "is_initialized", False) or layer.keys is None or layer.keys.dim() != 4:
        return 0, 0, 0, 0
    bits, group = cache.bits, cache.group_size
    value_group = min(group, head_dim)
    one_layer = KVLayout(1, heads, head_dim)
    seq = layer.keys.shape[-2]
    key_bits = layer.keys_done * heads * head_dim * bits + (layer.keys_done // group) * heads * head_dim * SCALE_BITS
    value_bits = layer.values_done * heads * (head_dim * bits + math.ceil(head_dim / value_group) * SCALE_BITS)
    stored = batch * (math.ceil(key_bits / 8) + math.ceil(value_bits / 8))
    # the residual window: keys and values not (yet) quantized, at full precision
    residual_k, residual_v = seq - layer.keys_done, seq - layer.values_done
    stored += one_layer.bytes(residual_k + residual_v, elem, batch=batch, sides=1)
    return stored, one_layer.bytes(seq, elem, batch=batch), seq, max(residual_k, residual_v)


def bytes_per_token(bits: int, group: int, heads: int, head_dim: int) -> float:
    """Bytes one quantized token occupies in one layer (keys + values, scales included)."""
    key_bits = heads * head_dim * (bits + SCALE_BITS / group)
    value_bits = heads * (head_dim * bits + math.ceil(head_dim / min(group, head_dim)) * SCALE_BITS)
    return (key_bits + value_bits) / 8
