"""Weight-only quantization (optimum-quanto int8 / int4), an optional extra imported only when a config asks.

The runner hands this method a private copy of the loaded model (the original is shared with other runs);
the copy's linear weights are quantized and frozen, and their bytes before and after are recorded as proof
that it took effect.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import torch
from pydantic import Field, field_validator

from evalrun.runners.accel import quanto_ext
from evalrun.runners.accel.base import AccelSettings, Acceleration, Capabilities
from evalrun.runners.accel.kv_layout import tensor_bytes


class WeightSettings(AccelSettings):
    quant: Literal["int8", "int4"]
    # checked when defaulted too: the one backend is the optional extra
    backend: Literal["quanto"] = Field(default="quanto", validate_default=True)
    exclude_lm_head: bool = True

    @field_validator("backend")
    @classmethod
    def _installed(cls, backend: str) -> str:
        if not quanto_ext.installed():
            raise ValueError(quanto_ext.missing("backend quanto"))
        return backend


def _linear_weight_bytes(model: Any) -> tuple[int, int]:
    """(bytes of every Linear weight as stored, number of Linear modules)."""
    total = count = 0
    for module in model.modules():
        weight = getattr(module, "weight", None)
        if isinstance(module, torch.nn.Linear) or type(module).__name__.startswith("QLinear"):
            if isinstance(weight, torch.Tensor):
                total += tensor_bytes(weight)
                count += 1
    return total, count


class WeightQuant(Acceleration):
    name: ClassVar[str] = "weights"
    settings_model: ClassVar[type[AccelSettings]] = WeightSettings
    capabilities: ClassVar[Capabilities] = Capabilities(modifies_weights=True, continuous_batching=True)
    headline_keys: ClassVar[tuple[str, ...]] = ("weight_bytes_ratio",)
    examples: ClassVar[tuple[dict[str, Any], ...]] = ({"quant": "int8"},)
    description: ClassVar[str] = "Weight-only quantization of the linear layers (optimum-quanto int8 / int4)"

    def __init__(self, settings: WeightSettings):
        super().__init__(settings)
        self.settings: WeightSettings = settings
        self._before = self._after = self._modules = 0
        self._quantized = 0

    def forced_in_one_pass(self, answer_tokens: int) -> str | None:
        return None  # the same quantized weights multiply every token's activations

    def prepare_model(self, model: Any) -> Any:
        from optimum.quanto import freeze, qint4, qint8, quantize

        if self.settings.quant == "int4":  # packed int4 weights unpack through quanto's compiled extension
            quanto_ext.ensure_extension(next(model.parameters()).device.type)
        self._before, self._modules = _linear_weight_bytes(model)
        qtype = qint8 if self.settings.quant == "int8" else qint4
        exclude = ["lm_head"] if self.settings.exclude_lm_head else None
        quantize(model, weights=qtype, exclude=exclude)
        freeze(model)
        self._after, _ = _linear_weight_bytes(model)
        self._quantized = sum(1 for m in model.modules() if type(m).__name__.startswith("QLinear"))
        return model

    def effects(self) -> dict[str, Any]:
        return {"backend": self.settings.backend, "quant": self.settings.quant, "linear_modules": self._modules,
                "quantized_modules": self._quantized, "linear_weight_bytes_before": self._before,
                "linear_weight_bytes_after": self._after,
                "weight_bytes_ratio": round(self._after / self._before, 4) if self._before else None,
                "lm_head_excluded": self.settings.exclude_lm_head}
