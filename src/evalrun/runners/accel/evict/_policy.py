"""KV eviction: keep only part of the prompt's keys and values after prefill (docs/accelerations.md).

A policy is a scorer (kvpress's ScorerPress) found by name, one file each (evict_*.py); the shared step here
keeps every KV head's `budget` highest-scoring entries in position order. With `scope: context` the document
is compressed before the question is seen (`Item.context`, then `Item.question`).

Pruned entries keep their absolute positions (keys are stored after RoPE), so the cache reports the tokens
processed as its length and the number evicted as the mask offset; this holds for one sequence at a time
only, so the method caps the batch at 1.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import torch
from pydantic import Field, field_validator, model_validator

from evalrun.runners.accel.base import LONGEST_CONTEXT, MAX_TOKEN_GROUP, AccelSettings
from evalrun.runners.accel.registry import subclasses
from evalrun.runners.accel.kv_layout import element_size

_PACKAGE = __name__.rpartition(".")[0]  # the policies: one public module each beside this one

if TYPE_CHECKING:  # the cache subclasses transformers' Cache: importing it loads cache_utils, hqq and dynamo
    from evalrun.runners.accel.evict._cache import EvictingCache, EvictingLayer


class EvictSettings(AccelSettings):
    method: str  # a policy name (see `policies`)
    # exactly one of: tokens kept per layer and head, or the fraction of the prompt's tokens removed
    # (upper bounds: a budget, sink count or window beyond any context evicts nothing)
    budget: int | None = Field(default=None, ge=1, le=LONGEST_CONTEXT)
    ratio: float | None = Field(default=None, gt=0.0, lt=1.0)
    scope: Literal["prompt", "context"] = "prompt"
    sinks: int = Field(default=4, ge=0, le=MAX_TOKEN_GROUP)  # streaming: first tokens always kept
    window: int = Field(default=32, ge=1, le=MAX_TOKEN_GROUP)  # snapkv: observation window, always kept
    kernel: int = Field(default=5, ge=1, le=255)  # snapkv: pooling width over token scores

    @field_validator("method")
    @classmethod
    def _known(cls, method: str) -> str:
        known = policies()
        if method not in known:
            raise ValueError(f"invalid value {method!r}; allowed: {', '.join(repr(n) for n in sorted(known))}")
        return method

    @model_validator(mode="after")
    def _check(self) -> "EvictSettings":
        if (self.budget is None) == (self.ratio is None):
            raise ValueError("give exactly one of budget (tokens kept) or ratio (fraction of prompt tokens removed)")
        if self.kernel % 2 == 0:
            raise ValueError(f"kernel must be odd so pooling keeps token positions (got {self.kernel})")
        policies()[self.method].check(self)
        return self

    def kept(self, n: int) -> int:
        """Tokens kept of `n` prompt tokens."""
        if self.budget is not None:
            return min(n, self.budget)
        return min(n, max(1, round(n * (1.0 - float(self.ratio or 0.0)))))


@dataclass
class ScoreInput:
    """What a policy may look at to score one layer's prompt entries."""

    module: Any  # the layer's attention block (Llama-style: q_proj, head_dim, layer_idx)
    hidden: torch.Tensor  # [batch, n, hidden size]: the prompt's input to this attention block
    keys: torch.Tensor  # [batch, kv heads, n, head dim], after RoPE
    values: torch.Tensor  # [batch, kv heads, n, head dim]
    position_embeddings: tuple[torch.Tensor, torch.Tensor] | None  # (cos, sin) of the prompt's positions
    settings: EvictSettings
    keep: int  # entries the shared step keeps per head

    def window_attention(self, window: int) -> torch.Tensor:
        """[batch, q heads, w, n]: the attention the prompt's last `w` queries pay every entry."""
        if self.position_embeddings is None:
            raise RuntimeError("this policy needs the attention's position embeddings, which the model did not pass")
        cos, sin = self.position_embeddings
        return window_attention(self.module, self.hidden, cos, sin, self.keys, window)


def window_attention(module: Any, hidden: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, keys: torch.Tensor,
                     window: int) -> torch.Tensor:
    """Softmaxed attention of the last `window` queries over the cached keys, [batch, q heads, w, n]."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb, repeat_kv

    batch, kv_heads, n, dim = keys.shape
    w = min(window, n, hidden.shape[1])
    q = module.q_proj(hidden[:, -w:]).view(batch, w, -1, dim).transpose(1, 2)
    q, _ = apply_rotary_pos_emb(q, q, cos[:, -w:], sin[:, -w:])
    groups = q.shape[1] // kv_heads
    attn = q.float() @ repeat_kv(keys, groups).float().transpose(-1, -2) / math.sqrt(dim)
    # window query i sits at position n - w + i and must not see later keys
    future = torch.ones(w, n, dtype=torch.bool, device=keys.device).triu(n - w + 1)
    return attn.masked_fill(future, float("-inf")).softmax(dim=-1)


class EvictionPolicy(abc.ABC):
    """One eviction policy: a `score` per prompt entry and KV head; the higher, the more likely kept."""

    name: ClassVar[str]
    # the EvictSettings fields this policy reads besides budget/ratio/scope (recorded in the effects)
    settings_keys: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def check(cls, settings: EvictSettings) -> None:
        """Raise ValueError for settings this policy cannot honour (a config error)."""

    @abc.abstractmethod
    def score(self, inp: ScoreInput) -> torch.Tensor:
        """[batch, kv heads, n] scores; the shared step keeps the top `inp.keep` of each head."""


@lru_cache(maxsize=1)
def _policies() -> dict[str, type[EvictionPolicy]]:
    # mypy refuses an abstract class for type[T] although only its subclasses are returned (and built)
    return {cls.name: cls for cls in subclasses(EvictionPolicy, _PACKAGE)}  # type: ignore[type-abstract]


def policies() -> dict[str, type[EvictionPolicy]]:
    """Eviction policy by name: every EvictionPolicy subclass in a module of runners/accel/."""
    return dict(_policies())


def keep_index(scores: torch.Tensor, keep: int) -> torch.Tensor:
    """Sorted indices of the `keep` highest scores of each head, [batch, kv heads, keep]."""
    return scores.topk(keep, dim=-1).indices.sort(dim=-1).values


def check_model(model: Any) -> None:
    """Refuse models whose attention blocks this method cannot read (it needs Llama-style q_proj and RoPE)."""
    for layer in _attention_modules(model):
        if not (hasattr(layer, "q_proj") and hasattr(layer, "head_dim") and hasattr(layer, "layer_idx")):
            raise ValueError(f"KV eviction supports Llama-style attention (q_proj, head_dim); "
                             f"{type(layer).__name__} of {type(model).__name__} has neither")


def _attention_modules(model: Any) -> list[Any]:
    return [m.self_attn for m in model.model.layers] if hasattr(model, "model") and hasattr(model.model, "layers") else []


class Evictor:
    """Applies one EvictSettings to the caches of a run and accounts for what it kept."""

    def __init__(self, settings: EvictSettings):
        self.settings = settings
        self.policy = policies()[settings.method]()
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
        from evalrun.runners.accel.evict._cache import EvictingCache

        self.cache = EvictingCache(model.config)
        return self.cache

    def _after_attention(self, module: Any, args: Any, kwargs: dict[str, Any], output: Any) -> None:
        """The shared keep-and-gather step, once per layer, right after the prompt's attention."""
        cache = self.cache
        hidden = kwargs.get("hidden_states", args[0] if args else None)
        if cache is None or hidden is None or hidden.shape[1] < 2:
            return
        layer: EvictingLayer = cache.layers[module.layer_idx]
        if layer.compressed or layer.stored() == 0 or layer.keys is None or layer.values is None:
            return
        n = layer.stored()
        keep = self.settings.kept(n)
        inp = ScoreInput(module, hidden, layer.keys, layer.values, kwargs.get("position_embeddings"),
                         self.settings, keep)
        layer.keep(keep_index(self.policy.score(inp), keep).to(layer.keys.device))
        self._account(module.layer_idx, n, layer.stored())

    def _account(self, layer_idx: int, offered: int, stored: int) -> None:
        if layer_idx == 0:
            self.prompt_tokens += offered
        if len(self.kept_after_prefill) <= layer_idx:
            self.kept_after_prefill.extend([0] * (layer_idx + 1 - len(self.kept_after_prefill)))
        self.kept_after_prefill[layer_idx] += stored
        self.exact &= stored == self.settings.kept(offered)

    def observe(self, model: Any) -> None:
        if self.cache is None:
            return
        from evalrun.runners.accel.evict._cache import cache_bytes_kept

        held, full = cache_bytes_kept(self.cache, element_size(model.dtype))
        if self.settings.scope == "context" and not getattr(self.cache, "context_prefilled", False):
            self.with_question += 1
        self.calls += 1
        self.held += held
        self.full += full
        self.cache = None

    def effects(self) -> dict[str, Any]:
        s = self.settings
        per_layer = [round(k / self.calls, 2) for k in self.kept_after_prefill] if self.calls else []
        return {"cache_class": "EvictingCache", "evict": s.method, "budget": s.budget, "ratio": s.ratio,
                "scope": s.scope, **{key: getattr(s, key) for key in self.policy.settings_keys},
                "generate_calls": self.calls,
                "prompt_tokens_mean": round(self.prompt_tokens / self.calls, 2) if self.calls else None,
                "tokens_kept_per_layer_mean": per_layer,
                "kept_exactly_as_configured": self.exact if self.calls else None, "kv_bytes_kept": self.held,
                "kv_bytes_full_precision": self.full,
                "kv_bytes_ratio": round(self.held / self.full, 4) if self.full else None,
                "items_compressed_with_question": self.with_question}
