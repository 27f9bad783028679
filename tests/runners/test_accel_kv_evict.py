"""KV eviction: each method keeps exactly its budget, keeps the right entries,
changes the computation only after prefill, scores like real attention, and the
query-agnostic path prefills the context before the question."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evalrun.evals.files import ConfigError
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.runners.accel import build_accelerations, validate_accelerations
from evalrun.runners.accel.evict.snapkv import snapkv_scores
from evalrun.runners.accel.evict import window_attention
from evalrun.runners.accel.evict._cache import EvictingCache
from tests.conftest import tiny_config
from tests.runners.conftest import eager_prefill, generate_with, token_ids


def _method(**evict):
    return build_accelerations(validate_accelerations({"kv_cache": {"evict": evict}}))[0]


@pytest.mark.parametrize("evict", [
    {"method": "streaming", "budget": 20, "sinks": 4},
    {"method": "snapkv", "budget": 20, "window": 8},
    {"method": "knorm", "ratio": 0.5},
])
def test_keeps_exactly_the_budget_in_every_layer_and_head(tiny, evict) -> None:
    n, new = 60, 6
    accel = _method(**evict)
    out, cache = generate_with(tiny, token_ids(n), accel, new)
    kept = 20 if "budget" in evict else 30
    for layer in cache.layers:
        # the last generated token is never fed back, so new - 1 decode entries were appended
        assert layer.keys.shape[-2] == kept + new - 1
        assert layer.cumulative_length == n + new - 1
    accel.observe(tiny, out.sequences)
    eff = accel.effects()
    assert eff["tokens_kept_per_layer_mean"] == [kept] * tiny.config.num_hidden_layers
    assert eff["kept_exactly_as_configured"] is True and eff["prompt_tokens_mean"] == n
    # bytes measured independently from the model's layout
    heads, dim = tiny.config.num_key_value_heads, tiny.config.hidden_size // tiny.config.num_attention_heads
    per_token = 2 * heads * dim * 4 * tiny.config.num_hidden_layers
    assert eff["kv_bytes_kept"] == (kept + new - 1) * per_token
    assert eff["kv_bytes_full_precision"] == (n + new - 1) * per_token


def test_streaming_keeps_the_sinks_and_the_most_recent_tokens(tiny) -> None:
    from transformers import DynamicCache

    ids = token_ids(40)
    full = DynamicCache()
    with torch.no_grad():
        tiny(ids, cache=full)
        cache = EvictingCache(tiny.config)
        accel = _method(method="streaming", budget=12, sinks=3)
        accel.attach(tiny)
        accel.evictor.cache = cache
        try:
            tiny(ids, cache=cache)
        finally:
            accel.detach(tiny)
    ref = full.layers[1].keys
    expected = torch.cat([ref[..., :3, :], ref[..., -9:, :]], dim=-2)
    assert torch.equal(cache.layers[1].keys, expected)


def test_eviction_changes_decoding_but_not_the_prefill(tiny) -> None:
    ids = token_ids(80)
    base, _ = generate_with(tiny, ids)
    evicted, _ = generate_with(tiny, ids, _method(method="knorm", budget=16))
    # the first token comes from the prefill, which attends to every token
    assert torch.allclose(base.scores[0], evicted.scores[0])
    assert not torch.allclose(base.scores[1], evicted.scores[1], atol=1e-5)


def test_a_budget_above_the_prompt_changes_nothing(tiny) -> None:
    ids = token_ids(30)
    base, _ = generate_with(tiny, ids)
    kept_all, cache = generate_with(tiny, ids, _method(method="snapkv", budget=500))
    assert torch.equal(base.sequences, kept_all.sequences)
    assert cache.layers[0].cumulative_length == cache.layers[0].keys.shape[-2]


def test_snapkv_scores_are_the_attention_of_the_observation_window(tiny_model_dir: Path) -> None:
    ids, captured, cache = eager_prefill(tiny_model_dir)
    attn = captured["module"]
    keys = cache.layers[1].keys
    w, n = 8, ids.shape[1]
    window = window_attention(attn, captured["hidden"], *captured["pe"], keys, window=w)
    scores = snapkv_scores(window, keys.shape[1], kernel=1)
    ref = captured["attn"][:, :, -w:, :].mean(dim=-2)
    ref = ref.view(1, keys.shape[1], -1, n).mean(dim=2)
    assert torch.allclose(scores[..., : n - w], ref[..., : n - w], atol=1e-6)
    assert torch.isinf(scores[..., n - w:]).all()


def _evict_config(model_dir: Path, **evict) -> dict:
    data = tiny_config(model_dir, name="evict")
    data["acceleration"] = {"kv_cache": {"evict": evict}}
    return data


@pytest.mark.slow
def test_context_scope_prefills_the_document_before_the_question(tiny_model_dir: Path, tmp_path: Path) -> None:
    """With a budget above every prompt nothing is evicted, so the two-step path must
    reproduce the baseline's tokens exactly; every needle item says where its question starts."""
    base = execute(prepare(parse_config(tiny_config(tiny_model_dir)), tmp_path), log=lambda _: None)
    cfg = parse_config(_evict_config(tiny_model_dir, method="knorm", budget=4000, scope="context"))
    prepared = prepare(cfg, tmp_path)
    assert prepared.runner.batch_size == 1
    item = prepared.items[0]
    text = prepared.runner.render(item)
    split = prepared.runner.context_split(text, item)
    ids = prepared.runner.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert 0 < split < len(ids)
    assert prepared.runner.tokenizer.decode(ids[split:]).lstrip().startswith("Question:")
    run = execute(prepared, log=lambda _: None)
    eff = run.manifest["effects"]["kv_cache"]
    assert eff["scope"] == "context" and eff["items_compressed_with_question"] == 0
    assert eff["generate_calls"] == len(run.items)
    for item_id, gen in base.generations.items():
        assert run.generations[item_id].output_ids == gen.output_ids


@pytest.mark.slow
def test_context_scope_compresses_only_the_context(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = parse_config(_evict_config(tiny_model_dir, method="streaming", budget=40, scope="context"))
    run = execute(prepare(cfg, tmp_path, limit=2), log=lambda _: None)
    eff = run.manifest["effects"]["kv_cache"]
    # the context was cut to 40 entries; the question and the answer were appended after it
    assert eff["tokens_kept_per_layer_mean"] == [40.0, 40.0]
    assert eff["kept_exactly_as_configured"] is True
    assert eff["prompt_tokens_mean"] < max(g.prompt_tokens for g in run.generations.values())


@pytest.mark.parametrize(("settings", "message"), [
    ({"evict": {"method": "snapkv"}}, "exactly one of budget"),
    ({"evict": {"method": "snapkv", "budget": 10, "ratio": 0.5}}, "exactly one of budget"),
    ({"evict": {"method": "knorm", "ratio": 1.0}}, "less than 1"),
    ({"evict": {"method": "snapkv", "budget": 64, "kernel": 4}}, "odd"),
    ({"evict": {"method": "streaming", "budget": 4}}, "no recent tokens"),
    ({"evict": {"method": "h2o", "budget": 4}}, "streaming"),
    ({"quant": "int4", "evict": {"method": "knorm", "budget": 64}}, "cannot be combined"),
    ({}, "quant (a quantized cache) or evict"),
])
def test_impossible_settings_are_config_errors(settings, message) -> None:
    data = {"name": "x", "tasks": [{"pack": "needle_numbers"}], "acceleration": {"kv_cache": settings}}
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert "acceleration.kv_cache" in str(err.value) and message in str(err.value)
