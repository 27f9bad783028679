"""Speculative decoding on a tiny random Llama in fp32: outputs equal greedy decoding
exactly, the runner generates one sequence at a time, and the drafted / accepted
counts are measured (cross-checked against the target's own forward passes)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from evalrun.evals.config import load_config, parse_config
from evalrun.evals.run import RunFailed, execute, prepare
from evalrun.runners.accel import validate_accelerations
from evalrun.runners.accel.speculative import SpeculativeDecoding
from evalrun.runners.models import load_model
from tests.conftest import CONFIGS

ITEMS = 6


def _config(model_dir: Path, **over: Any) -> dict:
    data = {
        "name": "tiny",
        "model": str(model_dir),
        "batch_size": 1,
        "dtype": "float32",
        "device": "cpu",
        "generation": {"max_new_tokens": 24},
        "tasks": [{"pack": "needle_numbers", "lengths": [96, 160, 240], "depths": [0.0, 1.0], "values": ["integer"]}],
    }
    data.update(over)
    return data


def _prepared(model_dir: Path, out: Path, **over: Any):
    return prepare(parse_config(_config(model_dir, **over), file=out / "cfg.yaml"), out)


def _run(model_dir: Path, out: Path, **over: Any):
    return execute(_prepared(model_dir, out, **over), log=lambda _m: None)


def _count_forwards(prepared) -> tuple[dict[str, int], Any]:
    """Count the target model's forward passes (the runner reuses this cached object)."""
    model, _tok, _s = load_model(prepared.source, prepared.device, prepared.dtype)
    counter = {"forwards": 0}

    def hook(module, _args, _kwargs):
        counter["forwards"] += module is model  # not a deep copy made as draft, which copies the hook

    return counter, model.register_forward_pre_hook(hook, with_kwargs=True)


@pytest.fixture(scope="module")
def greedy(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    result = _run(tiny_model_dir, tmp_path_factory.mktemp("greedy"))
    assert len(result.generations) == ITEMS
    return result


def _settings(method: str, model_dir: Path) -> dict:
    return {
        "prompt_lookup": {"method": "prompt_lookup", "num_tokens": 10, "max_ngram": 2},
        "draft_model": {"method": "draft_model", "draft": str(model_dir), "num_tokens": 5},
        "early_exit": {"method": "early_exit", "exit_layer": 1, "num_tokens": 3},
    }[method]


def _check_counts(eff: dict, generations: dict) -> None:
    assert eff["generate_calls"] == ITEMS
    assert eff["generate_calls_unassisted"] == 0 and eff["generate_calls_failed"] == 0
    assert eff["drafted_tokens"] > 0, eff
    assert 0 <= eff["accepted_tokens"] <= eff["drafted_tokens"], eff
    assert eff["acceptance_rate"] == round(eff["accepted_tokens"] / eff["drafted_tokens"], 4)
    # every new token is either an accepted draft token or the target's own token of a round
    assert eff["tokens_generated"] == sum(g.new_tokens for g in generations.values())
    assert eff["tokens_generated"] == eff["accepted_tokens"] + eff["verify_rounds"], eff


@pytest.mark.parametrize("method", ["prompt_lookup", "draft_model", "early_exit"])
@pytest.mark.slow
def test_outputs_equal_greedy_and_effects_are_measured(
    method: str, greedy, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if method == "draft_model":
        # a private copy as draft, so the hook below counts the target's forward passes only
        real = SpeculativeDecoding._load_draft
        monkeypatch.setattr(SpeculativeDecoding, "_load_draft", lambda self, model: copy.deepcopy(real(self, model)))
    prepared = _prepared(tiny_model_dir, tmp_path, batch_size=4,
                         acceleration={"speculative": _settings(method, tiny_model_dir)})
    assert prepared.runner.batch_size == 1, "the runner must cap the batch at max_batch_size"
    counter, handle = _count_forwards(prepared)
    try:
        result = execute(prepared, log=lambda _m: None)
    finally:
        handle.remove()

    assert {g.batch_size for g in result.generations.values()} == {1}
    assert {k: g.output_ids for k, g in result.generations.items()} == {
        k: g.output_ids for k, g in greedy.generations.items()
    }, f"{method} must reproduce greedy decoding exactly in fp32"
    assert all(g.error is None for g in result.generations.values())
    for g in result.generations.values():  # assisted generation streams several tokens per step: still timed
        assert g.prefill_seconds is not None and g.prefill_seconds > 0 and g.decode_seconds is not None
        assert g.new_tokens < 2 or g.decode_tokens_per_second == pytest.approx(
            (g.new_tokens - 1) / g.decode_seconds, rel=1e-3)
    assert result.manifest["speed"]["items_timed"] == len(result.generations)

    eff = result.manifest["effects"]["speculative"]
    assert eff["method"] == method and eff["settings"]["method"] == method
    _check_counts(eff, result.generations)
    if method != "early_exit":  # early exit drafts with the target itself: its drafts are forwards too
        assert counter["forwards"] == eff["verify_rounds"], (counter, eff)
    if method == "draft_model":
        assert eff["acceptance_rate"] > 0.95, "a model drafting for itself must be accepted almost always"
        assert eff["tokens_generated"] / counter["forwards"] > 1.3, (counter, eff)
        assert eff["draft"]["vocab_size"] == 49152 and eff["draft"]["spec"] == str(tiny_model_dir)
        # every round fully accepted: the heuristic schedule only grew the draft length
        assert eff["num_assistant_tokens_final"] > eff["num_assistant_tokens_initial"] == 5
    if method == "prompt_lookup":
        assert eff["max_drafted_per_round"] <= 10
        assert "num_assistant_tokens_final" not in eff


@pytest.mark.slow
def test_model_as_its_own_draft_and_a_clean_model_afterwards(tiny_model_dir: Path, greedy, tmp_path: Path) -> None:
    """No copy: the draft is the very object the runner generates with (models are cached per process)."""
    settings = {"method": "draft_model", "draft": str(tiny_model_dir), "schedule": "constant", "num_tokens": 4}
    prepared = _prepared(tiny_model_dir, tmp_path, acceleration={"speculative": settings})
    model, _tok, _s = load_model(prepared.source, prepared.device, prepared.dtype)
    before = model.generation_config.to_dict()
    result = execute(prepared, log=lambda _m: None)
    eff = result.manifest["effects"]["speculative"]
    assert eff["draft"]["is_target"] is True
    assert eff["acceptance_rate"] > 0.95
    assert eff["num_assistant_tokens_final"] == eff["num_assistant_tokens_initial"] == 4  # constant schedule
    assert {k: g.output_ids for k, g in result.generations.items()} == {
        k: g.output_ids for k, g in greedy.generations.items()
    }
    assert "_get_candidate_generator" not in vars(model), "detach must remove the instrumentation"
    assert model.generation_config.to_dict() == before


@pytest.mark.slow
def test_draft_with_another_vocabulary_is_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    other = tmp_path / "other-vocab"
    cfg = LlamaConfig(vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1)
    torch.manual_seed(1)
    LlamaForCausalLM(cfg).save_pretrained(other)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(other)
    settings = {"method": "draft_model", "draft": str(other)}
    with pytest.raises(RunFailed, match=r"vocabulary of 1000 tokens but the target model has 49152.*share the target's tokenizer"):
        _run(tiny_model_dir, tmp_path / "runs", acceleration={"speculative": settings})


def test_exit_layer_beyond_the_model_is_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(RunFailed, match="exit_layer 2 must be between 1 and 1"):
        _run(tiny_model_dir, tmp_path, acceleration={"speculative": {"method": "early_exit", "exit_layer": 2}})


@pytest.mark.slow
def test_early_exit_failing_mid_draft_leaves_the_shared_model_whole(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """transformers sets config.num_hidden_layers = exit_layer while drafting and does not restore it
    when drafting raises; the next run of the (cached, shared) model must still use every layer."""
    from transformers.generation.candidate_generator import AssistedCandidateGenerator

    def broken(self, input_ids, **kwargs):
        raise RuntimeError("draft failed")

    monkeypatch.setattr(AssistedCandidateGenerator, "get_candidates", broken)
    prepared = _prepared(tiny_model_dir, tmp_path, acceleration={"speculative": {"method": "early_exit", "exit_layer": 1}})
    model, _tok, _s = load_model(prepared.source, prepared.device, prepared.dtype)
    with pytest.raises(RunFailed, match="every item failed; first error: RuntimeError: draft failed"):
        execute(prepared, log=lambda _m: None)
    assert model.config.num_hidden_layers == 2
    eff = prepared.runner.accelerations[0].effects()
    assert eff["generate_calls"] == 0 and eff["generate_calls_failed"] >= ITEMS - 1


def test_settings_are_normalised_per_method(tiny_model_dir: Path) -> None:
    def v(raw: dict) -> dict:
        return validate_accelerations(raw).model_dump(mode="json")

    assert v({"speculative": {"method": "prompt_lookup"}}) == {
        "speculative": {"method": "prompt_lookup", "num_tokens": 10, "max_ngram": 2}
    }
    assert v({"speculative": {"method": "draft_model", "draft": str(tiny_model_dir)}}) == {
        "speculative": {"method": "draft_model", "draft": str(tiny_model_dir), "num_tokens": 5, "schedule": "heuristic"}
    }
    assert v({"speculative": {"method": "early_exit", "exit_layer": 3, "schedule": "constant"}}) == {
        "speculative": {"method": "early_exit", "exit_layer": 3, "num_tokens": 5, "schedule": "constant"}
    }


@pytest.mark.parametrize(
    "settings, words",
    [
        ({"method": "medusa"}, ["speculative.method", "invalid value 'medusa'", "prompt_lookup", "draft_model", "early_exit"]),
        ({}, ["speculative.method", "required"]),
        ({"method": "draft_model", "draft": "smollm2-135m", "max_ngram": 3},
         ["max_ngram does not apply to method draft_model", "belongs to prompt_lookup"]),
        ({"method": "prompt_lookup", "draft": "smollm2-135m"}, ["draft does not apply to method prompt_lookup"]),
        ({"method": "prompt_lookup", "schedule": "constant"}, ["schedule does not apply to method prompt_lookup"]),
        ({"method": "draft_model", "draft": "smollm2-135m", "exit_layer": 2},
         ["exit_layer does not apply to method draft_model", "belongs to early_exit"]),
        ({"method": "prompt_lookup", "num_tokens": 0}, ["speculative.num_tokens", "greater than or equal to 1"]),
        ({"method": "prompt_lookup", "max_ngram": 0}, ["speculative.max_ngram", "greater than or equal to 1"]),
        ({"method": "prompt_lookup", "num_token": 5}, ["speculative.num_token", "unknown key", "num_tokens"]),
        ({"method": "draft_model"}, ["method draft_model needs draft"]),
        ({"method": "early_exit"}, ["method early_exit needs exit_layer"]),
        ({"method": "draft_model", "draft": "smollm2-135m", "schedule": "fast"}, ["speculative.schedule", "heuristic"]),
        ({"method": "draft_model", "draft": "no/such/model.gguf"}, ["draft: GGUF file not found"]),
    ],
)
def test_config_errors_name_the_problem(settings: dict, words: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        validate_accelerations({"speculative": settings})
    for word in words:
        assert word in str(info.value), str(info.value)


def test_example_configs_load() -> None:
    base = load_config(CONFIGS / "baseline.yaml")
    pld = load_config(CONFIGS / "specdec-pld.yaml")
    draft = load_config(CONFIGS / "specdec-draft.yaml")
    assert (pld.name, draft.name) == ("specdec-pld", "specdec-draft")
    assert pld.acceleration.model_dump(mode="json") == {"speculative": {"method": "prompt_lookup", "num_tokens": 10, "max_ngram": 2}}
    assert draft.acceleration["speculative"].method == "draft_model"
    assert draft.acceleration["speculative"].draft == "smollm2-135m"
    for cfg in (pld, draft):
        assert cfg.tasks_dump() == base.tasks_dump() and cfg.generation == base.generation
