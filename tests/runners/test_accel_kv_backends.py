"""The maintained quantized-KV backends (transformers' fp8, hqq) on the tiny Llama: they
really store fewer bytes (counted from the cache's own tensors, not from settings),
they produce outputs at odd and even prompt lengths, and a group size that hqq or
quanto would break on at some length is refused before the first item, with the
sizes that work. The tiny Llama has 2 kv heads of 16 dims: 32 elements a token."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from evalrun.runners.accel import build_accelerations, validate_accelerations
from evalrun.runners.accel.base import cache_kwarg
from tests.runners.conftest import token_ids

HQQ4 = {"quant": "int4", "backend": "hqq", "axis_key": 1, "axis_value": 1, "group_size": 16, "residual_length": 8}
HQQ2 = {"quant": "int2", "backend": "hqq", "group_size": 16, "residual_length": 8}
FP8 = {"quant": "fp8"}


def _accel(settings: dict[str, Any]) -> Any:
    return build_accelerations(validate_accelerations({"kv_cache": settings}))[0]


def _generate(model: Any, ids: torch.Tensor, cache: Any, new: int = 6) -> torch.Tensor:
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                              min_new_tokens=new, do_sample=False, pad_token_id=0, **{cache_kwarg(): cache})


def _run(model: Any, settings: dict[str, Any], ids: torch.Tensor) -> tuple[Any, Any, dict[str, Any]]:
    accel = _accel(settings)
    accel.attach(model)
    cache = accel.generate_kwargs(model, ids.shape[0])[cache_kwarg()]
    out = _generate(model, ids, cache)
    accel.observe(model, out)
    accel.detach(model)
    return out, cache, accel.effects()


def _codes(layer: Any) -> list[torch.Tensor]:
    """The tensors holding the quantized codes of one layer (keys and values)."""
    return [layer._quantized_keys[0], layer._quantized_values[0]]


@pytest.mark.parametrize(("settings", "dtype", "bits"), [(FP8, torch.float8_e4m3fn, 8), (HQQ4, torch.uint8, 4),
                                                         (HQQ2, torch.uint8, 2)], ids=["fp8", "hqq-int4", "hqq-int2"])
@pytest.mark.slow
def test_the_prompt_is_stored_in_fewer_bytes(tiny, settings: dict, dtype: torch.dtype, bits: int) -> None:
    ids = token_ids(48)
    _, cache, eff = _run(tiny, settings, ids)
    tokens, heads, dim = 48 + 5, 2, 16  # the sixth new token is returned, never fed back
    full_per_layer = 2 * tokens * heads * dim * 4  # fp32 keys and values
    for layer in cache.layers:
        codes = _codes(layer)
        assert all(c.dtype == dtype for c in codes)
        # fp8 appends every token in fp8; hqq holds the 48 prompt tokens packed and the rest in the residual
        packed = tokens if settings is FP8 else 48
        assert sum(c.numel() * c.element_size() for c in codes) == 2 * packed * heads * dim * bits // 8
    assert eff["kv_bytes_full_precision"] == full_per_layer * len(cache.layers)
    assert len(eff["per_layer_kv_bytes_ratio"]) == tiny.config.num_hidden_layers
    assert eff["kv_bytes_ratio"] < {8: 0.27, 4: 0.4, 2: 0.3}[bits], eff  # scales, zeros and residual included
    assert all(abs(r - eff["kv_bytes_ratio"]) < 1e-3 for r in eff["per_layer_kv_bytes_ratio"])
    assert eff["max_residual_tokens"] == (0 if settings is FP8 else 5)
    assert eff["residual_length"] == (0 if settings is FP8 else 8)


@pytest.mark.parametrize("settings", [FP8, HQQ4, HQQ2, {**HQQ2, "quant": "int1", "group_size": 8},
                                      {**HQQ2, "quant": "int3"}, {**HQQ4, "quant": "int8", "group_size": 32}],
                         ids=["fp8", "hqq-int4-axis1", "hqq-int2-axis0", "hqq-int1", "hqq-int3", "hqq-int8"])
@pytest.mark.slow
def test_outputs_at_odd_and_even_prompt_lengths(tiny, settings: dict) -> None:
    for batch, length in [(1, 47), (1, 48), (3, 33)]:
        ids = token_ids(length * batch).reshape(batch, length)
        out, _, eff = _run(tiny, settings, ids)
        assert out.shape == (batch, length + 6)
        assert eff["generate_calls"] == 1 and eff["kv_bytes_ratio"] < 1


def test_a_group_size_hqq_would_break_on_is_refused_before_the_first_item(tiny) -> None:
    from transformers import QuantizedCache

    bad = {**HQQ4, "group_size": 32}  # 32 elements a token: one group, an odd row count at odd lengths
    # what the refusal spares: hqq itself fails at an odd prompt length, not at an even one
    raw = {"nbits": 4, "axis_key": 1, "axis_value": 1, "q_group_size": 32, "residual_length": 8}
    _generate(tiny, token_ids(48), QuantizedCache("hqq", tiny.config, **raw))
    with pytest.raises(RuntimeError, match="must match the size"):
        _generate(tiny, token_ids(47), QuantizedCache("hqq", tiny.config, **raw))
    with pytest.raises(ValueError, match="group sizes that work at every length here: 1, 2, 4, 8, 16$"):
        _accel(bad).attach(tiny)
    with pytest.raises(ValueError, match="quanto int4 with axis_key 0 and group_size 64 fails"):
        _accel({"quant": "int4", "backend": "quanto", "group_size": 64}).attach(tiny)


@pytest.mark.parametrize(("settings", "words"), [
    ({"quant": "int4", "backend": "quanto", "axis_key": -1}, "axis_key -1 is not supported by backend quanto"),
    ({**HQQ4, "quant": "int3"}, "hqq int3 on axis_key 1 cannot be dequantized"),
    ({**HQQ2, "group_size": 6}, "group_size 6 must be a multiple of 4"),
    ({"quant": "fp8", "residual_length": 16}, "backend fp8 quantizes per tensor"),
    ({"quant": "int1", "backend": "quanto"}, "quanto: int2, int4; hqq: int1, int2, int3, int4, int8"),
])
def test_settings_no_length_can_honour_are_config_errors(settings: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        validate_accelerations({"kv_cache": settings})


@pytest.mark.parametrize("settings", [FP8, HQQ4, HQQ2], ids=["fp8", "hqq-axis1", "hqq-axis0"])
def test_items_share_scales_only_where_reported(tiny, settings: dict) -> None:
    """fp8's per-tensor scale and hqq's axis-0 groups span the batch: an item's next-token
    logits then move with its batch mates; hqq's axis-1 groups stay within one token."""
    a, b = token_ids(40, seed=1), token_ids(40, seed=2)

    def next_logits(ids: torch.Tensor) -> tuple[torch.Tensor, dict]:
        accel = _accel(settings)
        cache = accel.generate_kwargs(tiny, ids.shape[0])[cache_kwarg()]
        with torch.no_grad():
            tiny(ids, **{cache_kwarg(): cache})
            out = tiny(torch.full((ids.shape[0], 1), 42), **{cache_kwarg(): cache}).logits[0, -1]
        accel.observe(tiny, None)
        return out, accel.effects()

    alone, eff = next_logits(a)
    batched, _ = next_logits(torch.cat([a, b]))
    moved = float((alone - batched).abs().max())
    assert (moved > 1e-3) == eff["items_share_scales"], moved
