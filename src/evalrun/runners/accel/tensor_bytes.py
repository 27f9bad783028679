"""Bytes a tensor really holds, quantized tensor subclasses included: the proof that a
method stored less (weights, KV caches), measured rather than computed from settings."""

from __future__ import annotations

from typing import Any

import torch


def tensor_bytes(obj: Any) -> int:
    """Bytes really held by a (possibly quantized, tensor-subclass) tensor, or a tuple, list or dict of them."""
    if obj is None:
        return 0
    if isinstance(obj, (tuple, list)):
        return sum(tensor_bytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(tensor_bytes(o) for o in obj.values())
    if isinstance(obj, torch.Tensor):
        flatten = getattr(obj, "__tensor_flatten__", None)
        if flatten is not None and type(obj) is not torch.Tensor:
            names, _ = flatten()
            return sum(tensor_bytes(getattr(obj, n)) for n in names)
        return obj.numel() * obj.element_size()
    return 0
