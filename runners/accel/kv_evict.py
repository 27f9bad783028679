"""KV eviction: keep only part of the prompt's keys and values after prefill.

`streaming` keeps attention sinks and the most recent tokens (StreamingLLM);
`snapkv` scores prompt tokens by the attention an observation window (the
prompt's last tokens) pays them, pooled, per KV head (SnapKV); `knorm` keeps
the keys with the smallest L2 norm, a query-free score. The prefill attention
itself sees every token, as in kvpress; the prompt's cache is pruned per layer
right after that layer's attention, and generated tokens are appended
uncompressed.

With `scope: context` the document is prefilled and compressed before the
question is seen (the realistic, query-agnostic setting: a cached document
serves questions asked later); the runner does this for items that say where
their document ends (`Item.context`, followed by `Item.question`).

Pruned entries keep their absolute positions (keys are stored after RoPE), so
the cache reports the tokens processed as its length and the mask offset as
the number evicted; this holds only for one sequence at a time, so the method
caps the batch at 1.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from pydantic import Field, model_validator
from transformers.cache_utils import Cache, DynamicLayer

from evalrun.runners.accel.base import LONGEST_CONTEXT, MAX_TOKEN_GROUP, AccelSettings


class EvictSettings(AccelSettings):
    method: Literal["streaming", "snapkv", "knorm"]
    # exactly one of: tokens kept per layer and head, or the fraction of the prompt's tokens removed
    # (upper bounds: a budget, sink count or window beyond any context evicts nothing)
    budget: int | None = Field(None, ge=1, le=LONGEST_CONTEXT)
    ratio: float | None = Field(None, gt=0.0, lt=1.0)
    scope: Literal["prompt", "context"] = "prompt"
    sinks: int = Field(4, ge=0, le=MAX_TOKEN_GROUP)  # streaming: first tokens always kept
    window: int = Field(32, ge=1, le=MAX_TOKEN_GROUP)  # snapkv: observation window, always kept
    kernel: int = Field(5, ge=1, le=255)  # snapkv: pooling width over token scores

    @model_validator(mode="after")
    def _check(self) -> "EvictSettings":
        if (self.budget is None) == (self.ratio is None):
            raise ValueError("give exactly one of budget (tokens kept) or ratio (fraction of prompt tokens removed)")
        if self.kernel % 2 == 0:
            raise ValueError(f"kernel must be odd so pooling keeps token positions (got {self.kernel})")
        if self.method == "streaming" and self.budget is not None and self.budget <= self.sinks:
            raise ValueError(f"budget {self.budget} leaves no recent tokens beside {self.sinks} sinks")
        return self

    def kept(self, n: int) -> int:
        """Tokens kept of `n` prompt tokens."""
        if self.budget is not None:
            return min(n, self.budget)
        return min(n, max(1, round(n * (1.0 - float(self.ratio or 0.0)))))


class EvictingLayer(DynamicLayer):
    """A layer that may hold fewer entries than the tokens it has processed."""

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
        gather = index.unsqueeze(-1).expand(-1, -1, -1, self.keys.shape[-1])
        self.keys = torch.gather(self.keys, 2, gather).contiguous()
        self.values = torch.gather(self.values, 2, gather).contiguous()
        self.compressed = True


class EvictingCache(Cache):
    def __init__(self, config: Any):
        text = config.get_text_config(decoder=True)
        super().__init__(layers=[EvictingLayer() for _ in range(text.num_hidden_layers)])


def snapkv_scores(module: Any, hidden: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, keys: torch.Tensor,
                  window: int, kernel: int) -> torch.Tensor:
    """[batch, kv heads, n] importance of each cached token to the last `window` queries."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb, repeat_kv

    batch, kv_heads, n, dim = keys.shape
    w = min(window, n, hidden.shape[1])
    q = module.q_proj(hidden[:, -w:]).view(batch, w, -1, dim).transpose(1, 2)
    q, _ = apply_rotary_pos_emb(q, q, cos[:, -w:], sin[:, -w:])
    groups = q.shape[1] // kv_heads
    attn = q.float() @ repeat_kv(keys, groups).float().transpose(-1, -2) / math.sqrt(dim)
    # window query i sits at position n - w + i and must not see later keys
    future = torch.ones(w, n, dtype=torch.bool, device=keys.device).triu(n - w + 1)
    attn = attn.masked_fill(future, float("-inf")).softmax(dim=-1)
    scores = attn.mean(dim=-2)  # [batch, q heads, n]
    scores = torch.nn.functional.avg_pool1d(scores, kernel, stride=1, padding=kernel // 2, count_include_pad=False)
    scores = scores.view(batch, kv_heads, groups, n).mean(dim=2)
    scores[..., n - w:] = float("inf")  # the observation window itself is always kept
    return scores


def keep_index(settings: EvictSettings, n: int, scores: torch.Tensor | None, shape: tuple[int, int]) -> torch.Tensor:
    """Sorted indices of the entries to keep, [batch, kv heads, kept]."""
    k = settings.kept(n)
    batch, heads = shape
    if settings.method == "streaming":
        sinks = min(settings.sinks, k - 1) if k > 1 else 0
        index = torch.cat([torch.arange(sinks), torch.arange(n - (k - sinks), n)])
        return index.expand(batch, heads, -1)
    assert scores is not None
    return scores.topk(k, dim=-1).indices.sort(dim=-1).values


def check_model(model: Any) -> None:
    """Refuse models whose attention blocks this method cannot read (it needs Llama-style q_proj and RoPE)."""
    for layer in _attention_modules(model):
        if not (hasattr(layer, "q_proj") and hasattr(layer, "head_dim") and hasattr(layer, "layer_idx")):
            raise ValueError(f"KV eviction supports Llama-style attention (q_proj, head_dim); "
                             f"{type(layer).__name__} of {type(model).__name__} has neither")


def _attention_modules(model: Any) -> list[Any]:
    return [m.self_attn for m in model.model.layers] if hasattr(model, "model") and hasattr(model.model, "layers") else []


def cache_bytes_kept(cache: EvictingCache, elem: int) -> tuple[int, int]:
    """(bytes held, bytes a full cache would hold)."""
    held = full = 0
    for layer in cache.layers:
        stored = layer.stored()
        if stored:
            batch, heads, _, dim = layer.keys.shape
            held += 2 * batch * heads * stored * dim * elem
            full += 2 * batch * heads * layer.cumulative_length * dim * elem
    return held, full


class Evictor:
    """Applies one EvictSettings to the caches of a run and accounts for what it kept."""

    def __init__(self, settings: EvictSettings):
        self.settings = settings
        self.cache: EvictingCache | None = None
        self._handles: list[Any] = []
        self.calls = 0
        self.prompt_tokens = 0  # tokens offered for compression, summed over calls
        self.kept_after_prefill: list[int] = []  # per layer, summed over calls
        self.exact = True  # every layer kept exactly what the settings ask for
        self.held = 0
        self.full = 0
        self.with_question = 0  # scope context, but the item did not say where its question starts

    def attach(self, model: Any) -> None:
        check_model(model)
        for module in _attention_modules(model):
            self._handles.append(module.register_forward_hook(self._after_attention, with_kwargs=True))

    def detach(self, model: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def new_cache(self, model: Any) -> EvictingCache:
        self.cache = EvictingCache(model.config)
        return self.cache

    def _after_attention(self, module: Any, args: Any, kwargs: dict[str, Any], output: Any) -> None:
        cache = self.cache
        hidden = kwargs.get("hidden_states", args[0] if args else None)
        if cache is None or hidden is None or hidden.shape[1] < 2:
            return
        layer: EvictingLayer = cache.layers[module.layer_idx]
        if layer.compressed or layer.stored() == 0:
            return
        n = layer.stored()
        scores = None
        if self.settings.method == "snapkv":
            cos, sin = kwargs["position_embeddings"]
            scores = snapkv_scores(module, hidden, cos, sin, layer.keys, self.settings.window, self.settings.kernel)
        elif self.settings.method == "knorm":
            scores = -layer.keys.float().norm(dim=-1)
        index = keep_index(self.settings, n, scores, (layer.keys.shape[0], layer.keys.shape[1]))
        layer.keep(index.to(layer.keys.device))
        if module.layer_idx == 0:
            self.prompt_tokens += n
        if len(self.kept_after_prefill) <= module.layer_idx:
            self.kept_after_prefill.extend([0] * (module.layer_idx + 1 - len(self.kept_after_prefill)))
        self.kept_after_prefill[module.layer_idx] += layer.stored()
        self.exact &= layer.stored() == self.settings.kept(n)

    def observe(self, model: Any) -> None:
        if self.cache is None:
            return
        elem = torch.empty((), dtype=model.dtype).element_size()
        held, full = cache_bytes_kept(self.cache, elem)
        if self.settings.scope == "context" and not getattr(self.cache, "context_prefilled", False):
            self.with_question += 1
        self.calls += 1
        self.held += held
        self.full += full
        self.cache = None

    def effects(self) -> dict[str, Any]:
        s = self.settings
        per_layer = [round(k / self.calls, 2) for k in self.kept_after_prefill] if self.calls else []
        return {
            "cache_class": "EvictingCache",
            "evict": s.method,
            "budget": s.budget,
            "ratio": s.ratio,
            "scope": s.scope,
            **({"sinks": s.sinks} if s.method == "streaming" else {}),
            **({"window": s.window, "kernel": s.kernel} if s.method == "snapkv" else {}),
            "generate_calls": self.calls,
            "prompt_tokens_mean": round(self.prompt_tokens / self.calls, 2) if self.calls else None,
            "tokens_kept_per_layer_mean": per_layer,
            "kept_exactly_as_configured": self.exact if self.calls else None,
            "kv_bytes_kept": self.held,
            "kv_bytes_full_precision": self.full,
            "kv_bytes_ratio": round(self.held / self.full, 4) if self.full else None,
            "items_compressed_with_question": self.with_question,
        }
