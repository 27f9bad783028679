"""Batch sizing: out-of-memory halves the batch and retries it (nothing lost or
duplicated), `auto` resolves to a size, and one model load serves every run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.runners.batch_plan import PLAN
from evalrun.runners.hf.runner import AUTO_START, HFRunner, auto_batch_size
from tests.conftest import tiny_config


def _oom_above(runner: HFRunner, limit: int, calls: list[int]) -> None:
    """Make the runner's generate call fail like a full accelerator above `limit` sequences."""
    real = runner._generate_batch

    def fake(items, request, shared=None):
        calls.append(len(items))
        if len(items) > limit:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (injected)")
        return real(items, request, shared)

    runner._generate_batch = fake  # type: ignore[method-assign]


@pytest.mark.slow
def test_out_of_memory_halves_the_batch_and_loses_nothing(tiny_model_dir: Path, tmp_path: Path) -> None:
    # four long needles and two short ones: the plan (longest first, least padding) batches them 4 + 2
    tasks = [{"pack": "needle_numbers", "lengths": [96, 200, 240], "depths": [0.0, 1.0], "values": ["integer"]}]
    reference = execute(prepare(parse_config(tiny_config(tiny_model_dir, batch_size=1, tasks=tasks)),
                                tmp_path / "one"), log=lambda _: None)
    prepared = prepare(parse_config(tiny_config(tiny_model_dir, batch_size=4, tasks=tasks)), tmp_path / "four")
    assert [len(b) for b in prepared.runner.batches(prepared.items)] == [4, 2]
    calls: list[int] = []
    _oom_above(prepared.runner, 1, calls)
    run = execute(prepared, log=lambda _: None)
    # 4 -> 2+2 -> 1+1+1+1; the next batch of 2 is cut to the halved size before it is tried
    assert calls[:7] == [4, 2, 1, 1, 2, 1, 1] and calls[7:] == [1, 1]
    assert sorted(run.generations) == sorted(it.id for it in run.items)
    assert all(g.error is None for g in run.generations.values())
    lines = (run.dir / "samples.jsonl").read_text().splitlines()
    assert len(lines) == len(run.items), "no item written twice"
    assert {k: g.output for k, g in run.generations.items()} == {k: g.output for k, g in reference.generations.items()}
    # padding is counted on the batches generated after the split: single prompts, none padded
    prompt_tokens = sum(g.prompt_tokens or 0 for g in run.generations.values())
    assert run.manifest["batching"] == {"configured": 4, "final": 1, "oom_halvings": 3, "order": "length", "seed": None,
                                        "plan": PLAN, "prompt_tokens": prompt_tokens,
                                        "padded_prefill_tokens": prompt_tokens, "padding_share": 0.0}


def test_out_of_memory_on_a_single_item_is_that_items_error(tiny_model_dir: Path, tmp_path: Path) -> None:
    prepared = prepare(parse_config(tiny_config(tiny_model_dir, batch_size=2)), tmp_path, limit=2)
    _oom_above(prepared.runner, 0, [])
    with pytest.raises(Exception, match="every item failed"):
        execute(prepared, log=lambda _: None)
    stored = (prepared.dir / "samples.jsonl").read_text()
    assert stored.count("OutOfMemoryError") == 2


@pytest.mark.slow
def test_auto_batch_size_resolves_when_the_model_loads(tiny_model_dir: Path, tmp_path: Path) -> None:
    prepared = prepare(parse_config(tiny_config(tiny_model_dir, batch_size="auto")), tmp_path)
    run = execute(prepared, log=lambda _: None)
    assert run.manifest["batching"]["configured"] == "auto"
    assert run.manifest["batching"]["final"] == AUTO_START  # on the CPU
    assert {g.batch_size for g in run.generations.values()} == {AUTO_START} or len(run.items) < AUTO_START


def test_auto_batch_size_respects_a_methods_limit(tiny_model_dir: Path) -> None:
    data = tiny_config(tiny_model_dir, batch_size="auto")
    data["acceleration"] = {"speculative": {"method": "prompt_lookup"}}
    prepared = prepare(parse_config(data), Path("/nonexistent"))
    assert prepared.runner.batch_size == 1


def test_auto_estimate_on_cuda_scales_with_free_memory(tiny_model_dir: Path, monkeypatch) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    items = prepare(parse_config(tiny_config(tiny_model_dir)), Path("/nonexistent")).items
    sizes = []
    for free in (2**26, 2**28):
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda free=free: (free, 2**34))
        sizes.append(auto_batch_size(model, "cuda", items, 64))
    assert 1 <= sizes[0] < sizes[1] <= 256
    assert auto_batch_size(model, "cpu", items, 64) == AUTO_START


@pytest.mark.slow
def test_runs_in_one_process_share_one_model_load(tiny_model_dir: Path, tmp_path: Path) -> None:
    from evalrun.runners.models._models import _LOADED

    base = execute(prepare(parse_config(tiny_config(tiny_model_dir, name="a")), tmp_path), log=lambda _: None)
    loaded = len(_LOADED)
    data = tiny_config(tiny_model_dir, name="b")
    data["acceleration"] = {"kv_cache": {"quant": "int8", "backend": "simulated"}}
    cand = execute(prepare(parse_config(data), tmp_path), log=lambda _: None)
    assert len(_LOADED) == loaded, "a generation-time method reuses the loaded model"
    assert cand.manifest["load_seconds"] == base.manifest["load_seconds"]
