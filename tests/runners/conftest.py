"""Builders for the runner tests: the tiny random Llama loaded once per module,
token ids, and greedy generation with an acceleration attached and detached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path):  # type: ignore[no-untyped-def]
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()


def token_ids(n: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(10, 1000, (1, n), generator=torch.Generator().manual_seed(seed))


def generate_with(model: Any, ids: torch.Tensor, accel: Any = None, new: int = 6) -> tuple[Any, Any]:
    """Greedy `new` tokens with the method attached (and detached after); returns the output and its cache."""
    kwargs = {}
    if accel is not None:
        accel.attach(model)
        kwargs = accel.generate_kwargs(model, 1)
    try:
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                 min_new_tokens=new, do_sample=False, output_scores=True,
                                 return_dict_in_generate=True, pad_token_id=0, **kwargs)
    finally:
        if accel is not None:
            accel.detach(model)
    return out, next(iter(kwargs.values()), None)


def eager_prefill(model_dir: Path, n: int = 50, layer: int = 1) -> tuple[torch.Tensor, dict[str, Any], Any]:
    """Prefill `n` tokens with eager attention, capturing one layer's inputs and its real attention
    weights: what an eviction policy's scores are checked against."""
    from transformers import AutoModelForCausalLM, DynamicCache

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").eval()
    captured: dict[str, Any] = {}

    def hook(module, args, kwargs, output):  # type: ignore[no-untyped-def]
        captured.update(hidden=kwargs["hidden_states"], pe=kwargs["position_embeddings"], attn=output[1],
                        module=module)

    handle = model.model.layers[layer].self_attn.register_forward_hook(hook, with_kwargs=True)
    cache = DynamicCache()
    ids = token_ids(n)
    with torch.no_grad():
        model(ids, cache=cache, output_attentions=True)
    handle.remove()
    return ids, captured, cache
