"""Quantized KV cache through transformers' QuantizedCache (hqq, fp8, quanto; docs/accelerations.md).

A fresh cache object is built per `generate` call (generate mutates what it is given), and the bytes it
really holds, per layer, are measured afterwards as proof that it took effect.

The grouped backends reshape the whole [batch, kv heads, tokens, head dim] tensor into groups, so whether a
group size works can depend on the prompt length; `check_layout` refuses, before the first item, any
setting that would fail at some length on the loaded model, so no run fails item by item on it.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import torch

from evalrun.runners.accel import quanto_ext
from evalrun.runners.accel.kv_layout import KVLayout, element_size, tensor_bytes

BITS = {f"int{b}": b for b in range(1, 9)}
# what transformers 5.24's layers accept and what then runs: quanto's layer takes 2 or 4 bits;
# hqq's takes 1/2/3/4/8; fp8 is per-tensor float8_e4m3fn
_SUPPORTED = {
    "quanto": {"int2", "int4"},
    "hqq": {"int1", "int2", "int3", "int4", "int8"},
    "fp8": {"fp8"},
    "simulated": {f"int{b}" for b in range(2, 9)},  # round-trip quantization in the KIVI layout
}
# quanto's axis -1 groups over batch x heads x tokens, so it fails unless group_size divides
# that product: a prompt-length lottery, refused here (its layer accepts it)
_AXES = {"quanto": {0}, "hqq": {0, 1}, "fp8": {0}, "simulated": {0}}
# hqq packs its codes along the rows of its [rows, group] matrix: 8, 4 or 2 codes a byte for 1, 2
# or 4 bits, so the row count must be a multiple of that (3 bits pad themselves, 8 bits need none)
HQQ_CODES_PER_BYTE = {1: 8, 2: 4, 3: 1, 4: 2, 8: 1}
# the backend of an integer `quant` given without one: maintained, and nothing to compile at first use
DEFAULT_BACKEND = "hqq"
_GROUPED = ("group_size", "residual_length", "axis_key", "axis_value")


def check_quant(s: Any) -> None:
    """Refuse a quant/backend/axis combination the backend cannot honour (ValueError for the config loader)."""
    if s.backend is None:
        s.backend = "fp8" if s.quant == "fp8" else DEFAULT_BACKEND
    allowed = _SUPPORTED[s.backend]
    if s.quant not in allowed:
        combos = "; ".join(f"{b}: {', '.join(sorted(q, key=_order))}" for b, q in _SUPPORTED.items())
        raise ValueError(f"quant {s.quant} is not supported by backend {s.backend} (supported: {combos})")
    if s.backend == "fp8":
        # (defaults pass: validated settings are validated again, defaults filled in)
        given = [k for k in _GROUPED if getattr(s, k) != type(s).model_fields[k].default]
        if given:
            raise ValueError(f"backend fp8 quantizes per tensor with no residual window: {', '.join(given)} "
                             "would be ignored (use backend quanto or hqq to quantize group-wise)")
    for axis_name in ("axis_key", "axis_value"):
        if getattr(s, axis_name) not in _AXES[s.backend]:
            raise ValueError(
                f"{axis_name} {getattr(s, axis_name)} is not supported by backend {s.backend} "
                f"(allowed: {sorted(_AXES[s.backend])})"
            )
    if s.backend == "hqq":
        _check_hqq(s)
    if s.backend == "hqq" and importlib.util.find_spec("hqq") is None:
        raise ValueError("backend hqq needs the package 'hqq', which is not installed")


def _order(quant: str) -> int:
    return BITS.get(quant, 99)


def _check_hqq(s: Any) -> None:
    """The hqq limits that hold whatever the model: its 3-bit unpacking crops axis-1 tensors to the
    wrong size, and on axis 0 each group is one packed column, so it must fill whole bytes."""
    bits = BITS[s.quant]
    codes = HQQ_CODES_PER_BYTE[bits]
    for axis_name in ("axis_key", "axis_value"):
        axis = getattr(s, axis_name)
        if bits == 3 and axis == 1:
            raise ValueError(f"hqq int3 on {axis_name} 1 cannot be dequantized (hqq 0.2.8 crops a 4-d tensor "
                             "to batch x heads / group rows): use axis 0")
        if axis == 0 and s.group_size % codes:
            raise ValueError(f"hqq {s.quant} on {axis_name} 0 packs {codes} codes a byte along each group: "
                             f"group_size {s.group_size} must be a multiple of {codes}")


def group_works(backend: str, bits: int, axis: int, group: int, per_token: int) -> bool:
    """Whether `group` works at every prompt length and batch size, where one token of one layer
    holds `per_token` = kv heads x head dim elements per side.

    quanto (axis 0) and hqq (axis 0) reshape the tensor into groups, so a token must fill whole
    groups; hqq's axis-0 groups are packed columns, so a group must also fill whole bytes; hqq on
    axis 1 packs its [tokens x heads x dim / group, group] rows 2, 4 or 8 to a byte, so a token must
    fill whole groups that many times over (else an odd token count breaks packing)."""
    if backend == "hqq":
        codes = HQQ_CODES_PER_BYTE[bits]
        return per_token % (group * codes) == 0 if axis == 1 else per_token % group == 0 and group % codes == 0
    return backend != "quanto" or per_token % group == 0


def check_layout(s: Any, layout: KVLayout) -> None:
    """Refuse, before the first item, a group size that would fail at some prompt length on this model."""
    per_token = layout.kv_heads * layout.head_dim
    bits = BITS.get(s.quant, 8)
    for axis_name in ("axis_key", "axis_value"):
        axis = getattr(s, axis_name)
        if group_works(s.backend, bits, axis, s.group_size, per_token):
            continue
        ok = [g for g in (2**k for k in range(11)) if group_works(s.backend, bits, axis, g, per_token)]
        raise ValueError(
            f"kv_cache: {s.backend} {s.quant} with {axis_name} {axis} and group_size {s.group_size} fails at some "
            f"prompt lengths on this model ({layout.kv_heads} kv heads x head dim {layout.head_dim}); group sizes "
            f"that work at every length here: {', '.join(map(str, ok)) or 'none'}"
        )


def layer_figures(layer: Any, batch: int, heads: int, dim: int, elem: int) -> tuple[int, int, int, int]:
    """(bytes stored, bytes at full precision, cached tokens, full-precision residual tokens) of one
    QuantizedCache layer, the stored bytes summed over the tensors it really holds (scales included)."""
    stored = sum(tensor_bytes(getattr(layer, a, None)) for a in ("_quantized_keys", "_quantized_values", "keys", "values"))
    seq = int(getattr(layer, "cumulative_length", 0) or 0)
    keys = getattr(layer, "keys", None)
    residual = int(keys.shape[-2]) if isinstance(keys, torch.Tensor) and keys.dim() == 4 else 0
    return stored, KVLayout(1, heads, dim).bytes(seq, elem, batch=batch), seq, residual


class KVQuantizer:
    """Builds one quantized cache per `generate` call and measures the bytes it held, per layer."""

    def __init__(self, settings: Any):
        self.settings = settings
        self._cache: Any = None
        self._shape = (0, 0, 0)
        self._per_token: float | None = None
        self._per_token_full: int | None = None
        self._calls = 0
        self._layer_stored: list[int] = []
        self._layer_full: list[int] = []
        self._max_tokens = 0
        self._max_residual = 0

    def check_model(self, model: Any) -> None:
        check_layout(self.settings, KVLayout.of(model.config))
        if self.settings.backend == "quanto":
            quanto_ext.ensure_extension(model.device.type)  # a first-use compile, said, before the first item

    def new_cache(self, model: Any, batch_size: int) -> Any:
        from transformers import QuantizedCache

        from evalrun.runners.accel._kv_simulated import SimulatedQuantCache

        s = self.settings
        if s.backend == "fp8":
            self._cache = QuantizedCache("fp8", model.config)
        elif s.backend == "simulated":
            self._cache = SimulatedQuantCache(model.config, BITS[s.quant], s.group_size, s.residual_length)
        else:
            self._cache = QuantizedCache(s.backend, model.config, nbits=BITS[s.quant], axis_key=s.axis_key,
                                         axis_value=s.axis_value, q_group_size=s.group_size,
                                         residual_length=s.residual_length)
        layout = KVLayout.of(model.config)
        self._shape = (batch_size, layout.kv_heads, layout.head_dim)
        return self._cache

    def observe(self, model: Any) -> None:
        if self._cache is None:
            return
        # imported here: the cache subclasses transformers' Cache, whose module loads hqq and dynamo
        from evalrun.runners.accel._kv_simulated import SimulatedQuantCache, bytes_per_token, layer_bytes

        batch, heads, dim = self._shape
        elem = element_size(model.dtype)
        if isinstance(self._cache, SimulatedQuantCache):
            figures = [layer_bytes(layer, self._cache, heads, dim, batch, elem) for layer in self._cache.quant_layers()]
            self._per_token = bytes_per_token(self._cache.bits, self._cache.group_size, heads, dim)
            self._per_token_full = KVLayout(1, heads, dim).bytes(1, elem)
        else:
            figures = [layer_figures(layer, batch, heads, dim, elem) for layer in self._cache.layers]
        if len(self._layer_stored) < len(figures):
            grow = len(figures) - len(self._layer_stored)
            self._layer_stored += [0] * grow
            self._layer_full += [0] * grow
        for i, (stored, full, tokens, residual) in enumerate(figures):
            self._layer_stored[i] += stored
            self._layer_full[i] += full
            self._max_tokens = max(self._max_tokens, tokens)
            self._max_residual = max(self._max_residual, residual)
        self._calls += 1
        self._cache = None

    def items_share_scales(self) -> bool:
        """fp8's one scale per layer tensor and hqq's axis-0 groups (strided over the whole tensor) span the
        batch: an item's outputs then depend on its batch mates, not only on the batch size."""
        s = self.settings
        return bool(s.backend == "fp8" or (s.backend == "hqq" and 0 in (s.axis_key, s.axis_value)))

    def effects(self) -> dict[str, Any]:
        s = self.settings
        grouped = s.backend != "fp8"
        stored, full = sum(self._layer_stored), sum(self._layer_full)
        return {
            "cache_class": "SimulatedQuantCache" if s.backend == "simulated" else "QuantizedCache",
            "backend": s.backend,
            "quant": s.quant,
            "group_size": s.group_size if grouped else None,
            "residual_length": s.residual_length if grouped else 0,
            "axis_key": s.axis_key if grouped else None,
            "axis_value": s.axis_value if grouped else None,
            "generate_calls": self._calls,
            "kv_bytes_stored": stored,
            "kv_bytes_full_precision": full,
            "kv_bytes_ratio": round(stored / full, 4) if full else None,
            "per_layer_kv_bytes_ratio": [round(a / b, 4) if b else None
                                         for a, b in zip(self._layer_stored, self._layer_full)],
            "max_cached_tokens": self._max_tokens,
            # the most tokens any layer held outside the quantized store when a call ended
            "max_residual_tokens": self._max_residual,
            "items_share_scales": self.items_share_scales(),
            **({"simulated": True, "layout": "KIVI (keys per channel, values per token)",
                "bytes_per_token_per_layer_as_stored": round(self._per_token, 2),
                "bytes_per_token_per_layer_full_precision": self._per_token_full}
               if s.backend == "simulated" and self._per_token is not None else {}),
        }
