"""Quantized KV cache through transformers' QuantizedCache (quanto, hqq, fp8).

The prompt's keys and values are stored quantized after prefill; later tokens
sit in a full-precision residual window until it fills. A fresh cache object
is built per `generate` call (generate mutates what it is given), and the
bytes it really holds are measured afterwards as proof that it took effect.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import torch

from evalrun.runners.accel.kv_simulated import SimulatedQuantCache, bytes_per_token, stored_bytes
from evalrun.runners.accel.tensor_bytes import tensor_bytes
from evalrun.runners.kv_layout import KVLayout, element_size

BITS = {f"int{b}": b for b in range(2, 9)}
_SUPPORTED = {
    "quanto": {"int2", "int4"},
    "hqq": {"int2", "int4", "int8"},
    "fp8": {"fp8"},
    "simulated": set(BITS),  # round-trip quantization in the KIVI layout, any width 2..8
}
_AXES = {"quanto": {0, -1}, "hqq": {0, 1}, "fp8": {0}, "simulated": {0}}


def check_quant(s: Any) -> None:
    """Refuse a quant/backend/axis combination the backend cannot honour (ValueError for the config loader)."""
    if s.backend is None:
        s.backend = "fp8" if s.quant == "fp8" else "quanto"
    allowed = _SUPPORTED[s.backend]
    if s.quant not in allowed:
        combos = "; ".join(f"{b}: {', '.join(sorted(q))}" for b, q in _SUPPORTED.items())
        raise ValueError(f"quant {s.quant} is not supported by backend {s.backend} (supported: {combos})")
    for axis_name in ("axis_key", "axis_value"):
        if getattr(s, axis_name) not in _AXES[s.backend]:
            raise ValueError(
                f"{axis_name} {getattr(s, axis_name)} is not supported by backend {s.backend} "
                f"(allowed: {sorted(_AXES[s.backend])})"
            )
    module = {"quanto": "optimum.quanto", "hqq": "hqq"}.get(s.backend)
    if module and importlib.util.find_spec(module.split(".")[0]) is None:
        raise ValueError(f"backend {s.backend} needs the package {module!r}, which is not installed")


def cache_bytes(cache: Any, shape: tuple[int, int, int], full_dtype: torch.dtype) -> tuple[int, int, int]:
    """(bytes stored, bytes a full-precision cache would hold, cached tokens) over all
    layers; `shape` is (batch, kv heads, head dim) of the call."""
    batch, heads, dim = shape
    elem = element_size(full_dtype)
    one_layer = KVLayout(1, heads, dim)
    stored = full = tokens = 0
    for layer in getattr(cache, "layers", []):
        stored += sum(
            tensor_bytes(getattr(layer, attr, None))
            for attr in ("_quantized_keys", "_quantized_values", "keys", "values")
        )
        seq = int(getattr(layer, "cumulative_length", 0) or 0)
        full += one_layer.bytes(seq, elem, batch=batch)
        tokens = max(tokens, seq)
    return stored, full, tokens


class KVQuantizer:
    """Builds one quantized cache per `generate` call and measures the bytes it held."""

    def __init__(self, settings: Any):
        self.settings = settings
        self._cache: Any = None
        self._shape = (0, 0, 0)
        self._per_token: float | None = None
        self._per_token_full: int | None = None
        self._calls = 0
        self._stored = 0
        self._full = 0
        self._max_tokens = 0

    def new_cache(self, model: Any, batch_size: int) -> Any:
        from transformers import QuantizedCache

        s = self.settings
        if s.backend == "fp8":
            self._cache = QuantizedCache("fp8", model.config)
        elif s.backend == "simulated":
            self._cache = SimulatedQuantCache(model.config, BITS[s.quant], s.group_size, s.residual_length)
        else:
            self._cache = QuantizedCache(
                s.backend,
                model.config,
                nbits=BITS[s.quant],
                axis_key=s.axis_key,
                axis_value=s.axis_value,
                q_group_size=s.group_size,
                residual_length=s.residual_length,
            )
        layout = KVLayout.of(model.config)
        self._shape = (batch_size, layout.kv_heads, layout.head_dim)
        return self._cache

    def observe(self, model: Any) -> None:
        if self._cache is None:
            return
        if isinstance(self._cache, SimulatedQuantCache):
            batch, heads, dim = self._shape
            elem = element_size(model.dtype)
            stored, full, tokens = stored_bytes(self._cache, heads, dim, batch, elem)
            self._per_token = bytes_per_token(self._cache.bits, self._cache.group_size, heads, dim)
            self._per_token_full = KVLayout(1, heads, dim).bytes(1, elem)
        else:
            stored, full, tokens = cache_bytes(self._cache, self._shape, model.dtype)
        self._calls += 1
        self._stored += stored
        self._full += full
        self._max_tokens = max(self._max_tokens, tokens)
        self._cache = None

    def effects(self) -> dict[str, Any]:
        s = self.settings
        return {
            "cache_class": "QuantizedCache",
            "backend": s.backend,
            "quant": s.quant,
            "group_size": s.group_size if s.backend != "fp8" else None,
            "residual_length": s.residual_length if s.backend != "fp8" else None,
            "axis_key": s.axis_key,
            "axis_value": s.axis_value,
            "generate_calls": self._calls,
            "kv_bytes_stored": self._stored,
            "kv_bytes_full_precision": self._full,
            "kv_bytes_ratio": round(self._stored / self._full, 4) if self._full else None,
            "max_cached_tokens": self._max_tokens,
            **({"simulated": True, "layout": "KIVI (keys per channel, values per token)",
                "bytes_per_token_per_layer_as_stored": round(self._per_token, 2),
                "bytes_per_token_per_layer_full_precision": self._per_token_full}
               if s.backend == "simulated" and self._per_token is not None else {}),
        }
