"""The `kv_cache` method: a quantized cache (`quant:`, kv_quant.py) or an evicting one (`evict:`, evict/):
one config key, since both replace the cache object `generate` works with.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from evalrun.runners.accel import quanto_ext
from evalrun.runners.accel.base import (
    MAX_TOKEN_GROUP, AccelSettings, Acceleration, Capabilities, cache_kwarg, merge_effects,
)
from evalrun.runners.accel.evict import EvictSettings, Evictor, policies
from evalrun.runners.accel.kv_quant import KVQuantizer, check_quant


class KVCacheSettings(AccelSettings):
    quant: Literal["int8", "int7", "int6", "int5", "int4", "int3", "int2", "int1", "fp8"] | None = None
    backend: Literal["quanto", "hqq", "fp8", "simulated"] | None = None
    # a group or residual window longer than any context would quantize nothing
    group_size: int = Field(default=64, ge=1, le=MAX_TOKEN_GROUP)
    residual_length: int = Field(default=128, ge=0, le=MAX_TOKEN_GROUP)
    axis_key: int = 0
    axis_value: int = 0
    evict: EvictSettings | None = None

    @field_validator("backend")
    @classmethod
    def _installed(cls, backend: str | None) -> str | None:
        if backend == "quanto" and not quanto_ext.installed():
            raise ValueError(quanto_ext.missing("backend quanto"))
        return backend

    @model_validator(mode="after")
    def _check(self) -> "KVCacheSettings":
        if self.quant is None and self.evict is None:
            raise ValueError("give quant (a quantized cache) or evict (an evicting cache)")
        if self.quant is not None and self.evict is not None:
            raise ValueError("quant and evict cannot be combined yet: make them two candidates")
        if self.quant is not None:
            check_quant(self)
        return self


class KVCache(Acceleration):
    name: ClassVar[str] = "kv_cache"
    settings_model: ClassVar[type[AccelSettings]] = KVCacheSettings
    # the method supplies its own cache object, so a shared prefix's cache cannot be reused
    capabilities: ClassVar[Capabilities] = Capabilities(prefix_reuse=False)
    headline_keys: ClassVar[tuple[str, ...]] = ("kv_bytes_ratio", "max_cached_tokens")
    effect_counters: ClassVar[frozenset[str]] = frozenset({
        "generate_calls", "kv_bytes_stored", "kv_bytes_kept", "kv_bytes_full_precision",
        "items_compressed_with_question"})
    # every eviction policy is added to these by the contract tests, from the policy registry
    # (the tiny Llama has 2 kv heads of 16 dims: 32 elements a token, so hqq int4 on axis 1 takes groups up to 16)
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {"quant": "int4", "backend": "simulated", "residual_length": 8, "group_size": 16},
        {"quant": "fp8"},
        {"quant": "int4", "backend": "hqq", "axis_key": 1, "axis_value": 1, "group_size": 16, "residual_length": 8},
        {"quant": "int2", "backend": "hqq", "group_size": 16, "residual_length": 8},
    )
    description: ClassVar[str] = (
        "KV cache: quant (transformers QuantizedCache: fp8, built in, one scale per tensor; hqq, the default, "
        "int1/int2/int3/int4/int8, axis 0 or 1 (int3: 0); quanto int2/int4, axis 0 (maintenance mode, the extra "
        "evalrun[quanto]); a group size that fails at "
        "some prompt length on the model is refused before the first item; or backend simulated, a round trip in "
        "the KIVI layout, int2..int8) or evict (method: {policies}; budget or ratio; "
        "scope prompt or context)"
    )

    def __init__(self, settings: KVCacheSettings):
        super().__init__(settings)
        self.settings: KVCacheSettings = settings
        self.evictor = Evictor(settings.evict) if settings.evict else None
        self.quantizer = KVQuantizer(settings) if settings.quant else None

    @classmethod
    def describe(cls) -> str:
        """The description with the eviction policies found (a new policy file shows up here)."""
        return cls.description.format(policies=", ".join(sorted(policies())))

    @classmethod
    def kv_bytes_ratio(cls, effects: dict[str, Any]) -> float | None:
        ratio = effects.get("kv_bytes_ratio")
        return float(ratio) if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) else None

    def run_capabilities(self) -> Capabilities:
        if self.settings.evict is None:
            return self.capabilities
        # kept entries keep their absolute positions only for one sequence at a time
        return dataclasses.replace(self.capabilities, max_batch_size=1,
                                   context_prefill=self.settings.evict.scope == "context")

    def attach(self, model: Any) -> None:
        if self.evictor:
            self.evictor.attach(model)
        if self.quantizer:
            self.quantizer.check_model(model)  # a group size that fails at some length fails the run, not items

    def detach(self, model: Any) -> None:
        if self.evictor:
            self.evictor.detach(model)

    def generate_kwargs(self, model: Any, batch_size: int) -> dict[str, Any]:
        if self.evictor:
            return {cache_kwarg(): self.evictor.new_cache(model)}
        assert self.quantizer is not None
        return {cache_kwarg(): self.quantizer.new_cache(model, batch_size)}

    def _method(self) -> Evictor | KVQuantizer:
        method = self.evictor or self.quantizer
        assert method is not None, "a kv_cache acceleration evicts or quantizes (its settings say which)"
        return method

    def shares_batch_state(self) -> bool:
        return self.quantizer is not None and self.quantizer.items_share_scales()

    def forced_in_one_pass(self, answer_tokens: int) -> str | None:
        """A chunk of the answer after the prefill sees what decode steps see where the cache treats each new
        token alone: an eviction policy prunes each layer once, right after the prompt's attention
        (`EvictingLayer.compressed`), and appends every later token unpruned (scope context prefills its
        document first: the runner's capabilities keep that on the decode path); hqq and quanto append new
        tokens to a full-precision residual window, so only while the answer fits in it. fp8 quantizes each
        new entry under the scale frozen at the prefill, but a chunk's rounding moves entries across fp8
        steps (one pass measured KL off by up to 1.1e-3 on SmolLM2-135M, benchmarks/RESULTS.md)."""
        q = self.quantizer
        if q is None:
            return None
        s = q.settings
        if s.backend in ("hqq", "quanto") and s.residual_length > answer_tokens + 1:
            return None
        if s.backend == "fp8":
            return "the fp8 KV cache quantizes every answer token: a chunk's rounding moves entries across fp8 steps"
        return (f"the {s.backend} KV cache quantizes within the answer (residual_length {s.residual_length}, "
                f"{answer_tokens} answer tokens)")

    def observe(self, model: Any, outputs: Any) -> None:
        self._method().observe(model)

    def effects(self) -> dict[str, Any]:
        return self._method().effects()

    @classmethod
    def merged_effects(cls, parts: list[dict[str, Any]]) -> dict[str, Any]:
        """The ratio over every worker's bytes: kept (eviction) or stored (quantization) over full."""
        kept = "kv_bytes_kept" if any("kv_bytes_kept" in p for p in parts) else "kv_bytes_stored"
        return merge_effects(parts, cls.effect_counters, {"kv_bytes_ratio": (kept, "kv_bytes_full_precision")})
