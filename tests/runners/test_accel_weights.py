"""Weight quantization on the tiny model: it changes a private copy, never the shared model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.runners.models import load_model, resolve_model


def _cfg(model_dir: Path, quant: str | None) -> dict:
    data = {"name": f"w-{quant}", "model": str(model_dir), "generation": {"max_new_tokens": 6},
            "tasks": [{"pack": "needle_numbers", "lengths": [128], "depths": [0.5], "values": ["integer"]}]}
    if quant:
        data["acceleration"] = {"weights": {"quant": quant}}
    return data


@pytest.mark.parametrize("quant, max_ratio", [("int8", 0.3), ("int4", 0.2)])
def test_weights_are_quantized_on_a_copy(tiny_model_dir: Path, tmp_path: Path, quant: str, max_ratio: float) -> None:
    shared, _, _ = load_model(resolve_model(str(tiny_model_dir)), "cpu", "float32")
    before = {n: p.detach().clone() for n, p in shared.named_parameters()}
    result = execute(prepare(parse_config(_cfg(tiny_model_dir, quant)), tmp_path), log=lambda _m: None)
    eff = result.manifest["effects"]["weights"]
    assert eff["quant"] == quant
    # 2 layers x 7 projections; lm_head left in full precision
    assert eff["linear_modules"] == 15 and eff["quantized_modules"] == 14
    # lm_head (vocab x 64, full precision) dominates the tiny model's linear bytes: measure the projections alone
    lm_head = shared.lm_head.weight.numel() * 4
    proj_ratio = (eff["linear_weight_bytes_after"] - lm_head) / (eff["linear_weight_bytes_before"] - lm_head)
    assert proj_ratio < max_ratio, proj_ratio  # fp32 -> int8 is ~1/4, -> int4 ~1/8, plus scales
    assert all(torch.equal(before[n], p) for n, p in shared.named_parameters()), "the shared model must stay intact"
    assert not any(type(m).__name__.startswith("QLinear") for m in shared.modules())


def test_weight_quant_settings_are_checked() -> None:
    from evalrun.runners.accel import validate_accelerations

    with pytest.raises(ValueError, match="weights.quant"):
        validate_accelerations({"weights": {"quant": "int3"}})
    with pytest.raises(ValueError, match="weights.backend"):
        validate_accelerations({"weights": {"quant": "int8", "backend": "gptq"}})
