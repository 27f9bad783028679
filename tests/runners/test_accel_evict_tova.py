"""TOVA eviction: the policy added as one file. It keeps exactly its budget in every layer
and head, its scores are the real attention of the last query (an eager forward's
weights, averaged over heads), it changes decoding at a tight budget, and
`evalrun accelerations` lists it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evalrun.runners.accel import build_accelerations, validate_accelerations
from evalrun.runners.accel.evict.tova import Tova
from evalrun.runners.accel.evict import ScoreInput, policies
from tests.runners.conftest import eager_prefill, generate_with, token_ids


def _method(**evict):
    return build_accelerations(validate_accelerations({"kv_cache": {"evict": {"method": "tova", **evict}}}))[0]


def test_registered_by_its_file_alone() -> None:
    assert policies()["tova"] is Tova


@pytest.mark.slow
def test_keeps_exactly_the_budget_in_every_layer_and_head(tiny) -> None:
    n, new, budget = 60, 6, 20
    accel = _method(budget=budget)
    out, cache = generate_with(tiny, token_ids(n), accel, new)
    for layer in cache.layers:
        assert layer.keys.shape[-2] == budget + new - 1  # every head of the layer holds the same count
        assert layer.cumulative_length == n + new - 1
    accel.observe(tiny, out.sequences)
    eff = accel.effects()
    assert eff["evict"] == "tova" and eff["kept_exactly_as_configured"] is True
    assert eff["tokens_kept_per_layer_mean"] == [budget] * tiny.config.num_hidden_layers


def test_scores_are_the_last_query_attention_averaged_over_heads(tiny_model_dir: Path) -> None:
    ids, captured, cache = eager_prefill(tiny_model_dir)
    attn = captured["module"]
    keys, values = cache.layers[1].keys, cache.layers[1].values
    n = ids.shape[1]
    settings = validate_accelerations({"kv_cache": {"evict": {"method": "tova", "budget": 8}}})["kv_cache"].evict
    inp = ScoreInput(attn, captured["hidden"], keys, values, captured["pe"], settings, 8)
    scores = Tova().score(inp)
    ref = captured["attn"][:, :, -1, :].mean(dim=1, keepdim=True).expand(1, keys.shape[1], n)  # [1, kv heads, n]
    assert scores.shape == (1, keys.shape[1], n)
    assert torch.allclose(scores[..., : n - 1], ref[..., : n - 1], atol=1e-6)
    assert torch.isinf(scores[..., -1]).all(), "the last token is always kept"
    # every KV head keeps the same tokens
    kept = scores.topk(8, dim=-1).indices.sort(dim=-1).values
    assert torch.equal(kept[:, 0], kept[:, 1])


@pytest.mark.slow
def test_a_tight_budget_changes_decoding_but_not_the_prefill(tiny) -> None:
    ids = token_ids(80)
    base, _ = generate_with(tiny, ids)
    evicted, _ = generate_with(tiny, ids, _method(budget=4))
    assert torch.allclose(base.scores[0], evicted.scores[0])  # the first token comes from the full prefill
    assert not torch.allclose(base.scores[1], evicted.scores[1], atol=1e-5)


def test_listed_by_evalrun_accelerations() -> None:
    from typer.testing import CliRunner

    from evalrun.cli import app

    res = CliRunner().invoke(app, ["accelerations"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "tova" in res.output
