"""The `kernels` method: which attention implementation the model runs (eager, sdpa, flex_attention,
flash_attention_2; docs/accelerations.md).

The loaded model is shared by every run in the process, so `attach` switches it with transformers' own
`set_attn_implementation` and `detach` puts every config's previous value back exactly. The proof is read
from the model after the switch, and every attention function transformers dispatches to is wrapped for the
run, so `attention_calls` says which kernels actually ran.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections import Counter
from typing import Any, Callable, ClassVar, Literal

from pydantic import field_validator

from evalrun.runners.accel.base import AccelSettings, Acceleration, Capabilities

# the function name transformers' model files give their own eager attention (looked up
# at call time, so wrapping the module global counts it)
EAGER_FUNCTION = "eager_attention_forward"


class KernelSettings(AccelSettings):
    attention: Literal["eager", "sdpa", "flex_attention", "flash_attention_2"]

    @field_validator("attention")
    @classmethod
    def _installed(cls, value: str) -> str:
        if value == "flash_attention_2" and importlib.util.find_spec("flash_attn") is None:
            raise ValueError("flash_attention_2 needs the package 'flash-attn' (pip install flash-attn) and a CUDA "
                             "device; the package is not installed")
        return value


def _configs(model: Any) -> list[Any]:
    """Every config object of the model (its own, its submodels', their sub-configs), once each."""
    seen: dict[int, Any] = {}
    pending = [model.config] + [m.config for m in model.modules() if hasattr(m, "config")]
    while pending:
        cfg = pending.pop()
        if id(cfg) in seen or not hasattr(cfg, "_attn_implementation"):
            continue
        seen[id(cfg)] = cfg
        pending.extend(getattr(cfg, key, None) for key in getattr(cfg, "sub_configs", {}) or {})
    return list(seen.values())


def attention_modules(model: Any) -> list[Any]:
    """The attention layers: modules named *Attention* that read their implementation from a config."""
    return [m for m in model.modules()
            if "Attention" in type(m).__name__ and hasattr(getattr(m, "config", None), "_attn_implementation")]


class CallCounter:
    """Counts the calls through each attention function transformers can dispatch to, while installed.

    The registered ones (sdpa, flex, flash, ...) are wrapped in `ALL_ATTENTION_FUNCTIONS`' local overrides,
    eager attention in each model file's module; `remove` restores both exactly."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.module_calls = 0
        self._local: dict[str, Callable] | None = None
        self._patched: list[tuple[Any, Callable]] = []
        self._hooks: list[Any] = []

    def _wrap(self, key: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[key] += 1
            return fn(*args, **kwargs)

        return counted

    def _count_module(self, *_: Any) -> None:
        self.module_calls += 1

    def install(self, model: Any) -> None:
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

        self._local = dict(ALL_ATTENTION_FUNCTIONS._local_mapping)
        for key in list(ALL_ATTENTION_FUNCTIONS.keys()):
            ALL_ATTENTION_FUNCTIONS[key] = self._wrap(key, ALL_ATTENTION_FUNCTIONS[key])
        modules = attention_modules(model)
        for name in sorted({type(m).__module__ for m in modules}):
            owner = sys.modules.get(name)
            fn = getattr(owner, EAGER_FUNCTION, None)
            if callable(fn):
                self._patched.append((owner, fn))
                setattr(owner, EAGER_FUNCTION, self._wrap("eager", fn))
        # a module call no wrapped function saw would show as calls minus counted calls
        self._hooks = [m.register_forward_pre_hook(self._count_module) for m in modules]

    def remove(self) -> None:
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

        if self._local is not None:
            ALL_ATTENTION_FUNCTIONS._local_mapping.clear()
            ALL_ATTENTION_FUNCTIONS._local_mapping.update(self._local)
            self._local = None
        for owner, fn in self._patched:
            setattr(owner, EAGER_FUNCTION, fn)
        self._patched = []
        for hook in self._hooks:
            hook.remove()
        self._hooks = []


class Kernels(Acceleration):
    name: ClassVar[str] = "kernels"
    settings_model: ClassVar[type[AccelSettings]] = KernelSettings
    # switches a setting of the shared model, reversibly: no copy, any batch, prefix reuse is fine
    capabilities: ClassVar[Capabilities] = Capabilities()
    label_keys: ClassVar[tuple[str, ...]] = ("attention",)
    effect_counters: ClassVar[frozenset[str]] = frozenset({"generate_calls", "attention_calls", "attention_module_calls"})
    examples: ClassVar[tuple[dict[str, Any], ...]] = ({"attention": "eager"}, {"attention": "sdpa"})
    description: ClassVar[str] = ("Attention kernels: eager, sdpa, flex_attention (CUDA) or flash_attention_2 "
                                  "(flash-attn, CUDA); switched on the shared model for the run, calls counted")

    def __init__(self, settings: KernelSettings):
        super().__init__(settings)
        self.settings: KernelSettings = settings
        self._saved: list[tuple[Any, Any]] = []
        self._before: str | None = None
        self._used: str | None = None
        self._modules: Counter[str] = Counter()
        self._counter = CallCounter()
        self._generate_calls = 0

    @classmethod
    def headline(cls, effects: dict[str, Any]) -> list[str]:
        out = [f"attention {effects.get('used')} (was {effects.get('before')})"] if effects.get("used") else []
        calls = effects.get("attention_calls")
        if isinstance(calls, dict):
            out += [f"{k} calls {v}" for k, v in sorted(calls.items())] or ["attention calls 0"]
        return out

    def check_device(self, device: str, dtype: str) -> None:
        import torch

        attention = self.settings.attention
        if attention == "flash_attention_2" and device != "cuda":
            raise ValueError(f"attention: flash_attention_2 needs a CUDA device; this run's device is {device}")
        if attention == "flash_attention_2" and dtype not in ("float16", "bfloat16"):
            raise ValueError(f"attention: flash_attention_2 runs in float16 or bfloat16, not {dtype} (set dtype)")
        if attention == "flex_attention" and device == "cpu":
            raise ValueError(
                f"attention: flex_attention does not run on the CPU with torch {torch.__version__}: transformers "
                "always compiles it, and inductor's CPU flex-attention kernel fails to compile (a C++ code "
                "generation error) for the left-padded batches the runner generates; use a CUDA device")

    def attach(self, model: Any) -> None:
        self._saved = [(cfg, cfg._attn_implementation) for cfg in _configs(model)]
        self._before = model.config._attn_implementation
        try:
            model.set_attn_implementation(self.settings.attention)
            self._used = model.config._attn_implementation
            if self._used != self.settings.attention:
                raise RuntimeError(f"{type(model).__name__} cannot switch its attention to "
                                   f"{self.settings.attention} (it kept {self._used})")
        except BaseException:
            self._restore()
            raise
        self._modules = Counter(m.config._attn_implementation for m in attention_modules(model))
        self._counter, self._generate_calls = CallCounter(), 0  # effects describe the latest run
        self._counter.install(model)

    def _restore(self) -> None:
        for cfg, value in self._saved:
            cfg._attn_implementation_internal = value
        self._saved = []

    def detach(self, model: Any) -> None:
        self._counter.remove()
        self._restore()

    def observe(self, model: Any, outputs: Any) -> None:
        self._generate_calls += 1

    def effects(self) -> dict[str, Any]:
        return {"requested": self.settings.attention, "before": self._before, "used": self._used,
                "attention_modules": dict(sorted(self._modules.items())),
                "attention_calls": dict(sorted(self._counter.calls.items())),
                "attention_module_calls": self._counter.module_calls, "generate_calls": self._generate_calls}
