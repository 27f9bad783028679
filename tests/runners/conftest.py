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
