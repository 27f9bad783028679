"""Simulated low-bit KV (KIVI layout): the round trip really happens where it should,
the residual window stays exact, and the run reports bytes as a real store would hold."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.runners.accel import validate_accelerations
from evalrun.runners.accel._kv_simulated import SimulatedQuantCache, bytes_per_token, fake_quantize


def test_fake_quantize_uses_at_most_2_pow_bits_levels_per_group() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 40, 16)
    for bits in (2, 3, 4, 8):
        y = fake_quantize(x, bits, dim=-2, group=8)  # per channel, 8 tokens a group
        assert y.shape == x.shape
        groups = y[0, 0, :40, 5].reshape(5, 8)
        assert all(len(set(g.tolist())) <= 2**bits for g in groups)
    errors = [float((fake_quantize(x, b, dim=-1, group=16) - x).abs().mean()) for b in (2, 4, 8)]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.01


def test_cache_round_trips_old_tokens_and_keeps_the_residual_exact(tiny_model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, DynamicCache

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    ids = torch.randint(10, 1000, (1, 50), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        exact = DynamicCache(config=model.config)
        model(ids, past_key_values=exact)
        sim = SimulatedQuantCache(model.config, bits=2, group_size=8, residual_length=10)
        out_sim = model(ids, past_key_values=sim)
        out_full = model(ids)
    # the prefill attention itself saw full precision, as with transformers' QuantizedCache
    assert torch.allclose(out_sim.logits, out_full.logits)
    layer, ref = sim.layers[0], exact.layers[0]
    assert layer.keys_done == 40 and layer.values_done == 40  # 50 - 10 residual, whole key groups of 8
    assert torch.equal(layer.keys[..., 40:, :], ref.keys[..., 40:, :])
    assert not torch.equal(layer.keys[..., :40, :], ref.keys[..., :40, :])
    channel = layer.keys[0, 0, :40, 3].reshape(5, 8)
    assert all(len(set(g.tolist())) <= 4 for g in channel)
    # the next token attends to the round-tripped prompt: 2-bit changes the computation
    nxt = torch.tensor([[42]])
    with torch.inference_mode():
        step_sim = model(nxt, past_key_values=sim).logits
        step_exact = model(nxt, past_key_values=exact).logits
    assert not torch.allclose(step_sim, step_exact, atol=1e-4)


def _cfg(model_dir: Path, quant: str | None) -> dict:
    data = {"name": f"sim-{quant}", "model": str(model_dir), "batch_size": 2, "generation": {"max_new_tokens": 6},
            "tasks": [{"pack": "needle_numbers", "lengths": [160], "depths": [0.0, 1.0], "values": ["integer"]}]}
    if quant:
        data["acceleration"] = {"kv_cache": {"quant": quant, "backend": "simulated", "group_size": 16,
                                             "residual_length": 16}}
    return data


@pytest.mark.parametrize("quant, bits", [("int3", 3), ("int8", 8)])
def test_run_reports_bytes_as_stored(tiny_model_dir: Path, tmp_path: Path, quant: str, bits: int) -> None:
    result = execute(prepare(parse_config(_cfg(tiny_model_dir, quant)), tmp_path), log=lambda _m: None)
    eff = result.manifest["effects"]["kv_cache"]
    assert eff["simulated"] is True and eff["backend"] == "simulated"
    heads, dim = 2, 16  # tiny model: 2 KV heads of 16
    assert eff["bytes_per_token_per_layer_as_stored"] == pytest.approx(bytes_per_token(bits, 16, heads, dim), abs=0.01)
    assert eff["bytes_per_token_per_layer_full_precision"] == 2 * heads * dim * 4
    assert 0 < eff["kv_bytes_stored"] < eff["kv_bytes_full_precision"]
    assert eff["generate_calls"] == 1


@pytest.mark.slow
def test_int8_simulated_keeps_greedy_outputs(tiny_model_dir: Path, tmp_path: Path) -> None:
    base = execute(prepare(parse_config(_cfg(tiny_model_dir, None)), tmp_path / "b"), log=lambda _m: None)
    int8 = execute(prepare(parse_config(_cfg(tiny_model_dir, "int8")), tmp_path / "8"), log=lambda _m: None)
    assert {k: g.output for k, g in int8.generations.items()} == {k: g.output for k, g in base.generations.items()}
    assert base.manifest["key"] != int8.manifest["key"]


def test_settings_are_checked() -> None:
    assert validate_accelerations({"kv_cache": {"quant": "int3", "backend": "simulated"}})["kv_cache"].quant == "int3"
    with pytest.raises(ValueError, match="not supported by backend hqq"):
        validate_accelerations({"kv_cache": {"quant": "int5"}})
    with pytest.raises(ValueError, match="axis_key"):
        validate_accelerations({"kv_cache": {"quant": "int4", "backend": "simulated", "axis_key": -1}})
