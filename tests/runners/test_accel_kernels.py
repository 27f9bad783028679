"""The `kernels` method on the tiny Llama: the attention implementation asked for is the one
whose calls are counted, the shared model and transformers' dispatch table come back exactly,
and an implementation this machine cannot run is a config error naming the key."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from evalrun.evals.files import ConfigError
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.runners.accel import build_accelerations, validate_accelerations
from tests.conftest import tiny_config


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_the_calls_counted_are_the_implementation_asked_for(tiny, attention: str) -> None:
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    llama = sys.modules[type(tiny).__module__]
    eager_fn, local = llama.eager_attention_forward, dict(ALL_ATTENTION_FUNCTIONS._local_mapping)
    assert tiny.config._attn_implementation == "sdpa"  # what the loaded model runs by default
    accel = build_accelerations(validate_accelerations({"kernels": {"attention": attention}}))[0]
    ids = torch.randint(10, 1000, (2, 24), generator=torch.Generator().manual_seed(1))
    accel.attach(tiny)
    try:
        assert tiny.config._attn_implementation == attention
        with torch.no_grad():
            out = tiny.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=4,
                                min_new_tokens=4, do_sample=False, pad_token_id=0)
        accel.observe(tiny, out)
    finally:
        accel.detach(tiny)
    eff = accel.effects()
    assert (eff["requested"], eff["used"], eff["before"]) == (attention, attention, "sdpa")
    assert eff["attention_modules"] == {attention: 2}  # both layers' attention read the new value
    # one prefill and three decode steps through each of the two layers, all through the asked kernel
    assert eff["attention_calls"] == {attention: 8} and eff["attention_module_calls"] == 8
    assert tiny.config._attn_implementation == "sdpa"
    assert llama.eager_attention_forward is eager_fn and ALL_ATTENTION_FUNCTIONS._local_mapping == local


def test_the_run_manifest_records_the_kernel_that_ran(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = parse_config(tiny_config(tiny_model_dir, acceleration={"kernels": {"attention": "eager"}}),
                       file=tmp_path / "cfg.yaml")
    eff = execute(prepare(cfg, tmp_path, limit=2), log=lambda _m: None).manifest["effects"]["kernels"]
    assert eff["used"] == "eager" and eff["generate_calls"] == 1
    assert set(eff["attention_calls"]) == {"eager"} and eff["attention_calls"]["eager"] == eff["attention_module_calls"]


def test_flash_attention_needs_its_package(tmp_path: Path) -> None:
    if importlib.util.find_spec("flash_attn") is not None:
        pytest.skip("flash-attn is installed here")
    with pytest.raises(ConfigError) as info:
        parse_config(tiny_config(tmp_path, acceleration={"kernels": {"attention": "flash_attention_2"}}),
                     file=tmp_path / "fa.yaml")
    assert "acceleration.kernels.attention:" in str(info.value) and "'flash-attn'" in str(info.value)


def test_flex_attention_on_the_cpu_is_a_config_error(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = parse_config(tiny_config(tiny_model_dir, device="cpu", acceleration={"kernels": {"attention": "flex_attention"}}),
                       file=tmp_path / "flex.yaml")
    with pytest.raises(ConfigError) as info:
        prepare(cfg, tmp_path)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'flex.yaml'}: acceleration.kernels.attention: flex_attention")
    assert "CUDA" in message and "\n" not in message
