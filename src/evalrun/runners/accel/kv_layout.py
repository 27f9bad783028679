"""The one place KV-cache bytes are computed from a model's shape, and where a tensor's bytes are measured.

2 x layers x batch x kv heads x tokens x head dim x element size bytes; auto batch sizing, every KV method's
effects and the manifest's speed figures use this, so they cannot disagree about a full-precision cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class KVLayout:
    """The shape of a KV cache: decoder layers, KV heads per layer and their head dimension."""

    layers: int
    kv_heads: int
    head_dim: int

    @classmethod
    def of(cls, config: Any) -> "KVLayout":
        """From a transformers config (its text config for multimodal ones); raises on a config
        that does not say (AttributeError, TypeError, ValueError, ZeroDivisionError)."""
        cfg = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
        heads = int(getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads)
        dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads)
        return cls(int(cfg.num_hidden_layers), heads, dim)

    def bytes(self, tokens: int, element_size: int, *, batch: int = 1, layers: int | None = None,
              sides: int = 2) -> int:
        """Bytes of `tokens` cached tokens at full precision: keys and values (`sides` 2), or one of them
        (`sides` 1), over `layers` (default: all of them)."""
        n_layers = self.layers if layers is None else layers
        return sides * n_layers * batch * self.kv_heads * tokens * self.head_dim * element_size


def element_size(dtype: Any) -> int:
    """Bytes of one element of a torch dtype."""
    import torch

    return torch.empty((), dtype=dtype).element_size()


def tensor_bytes(obj: Any) -> int:
    """Bytes really held by a (possibly quantized, tensor-subclass) tensor, or a tuple, list or dict of them:
    the proof that a method stored less (weights, KV caches), measured rather than computed from settings."""
    import torch

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


__all__ = ["KVLayout", "element_size", "tensor_bytes"]
