"""`batching: {mode: continuous}`: transformers' continuous batching over a paged KV cache in the hf
runner, on the tiny random Llama. The configs it refuses, the run key it keeps, outputs equal to
the static runner's (greedy, fp32 CPU), what the manifest records, and failures kept per item."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evalrun.evals.files import ConfigError
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, key_payload, prepare
from evalrun.runners.accel import all_methods
from evalrun.runners.models import ModelSource
from tests.conftest import BASE_CONFIG, tiny_config

CONTINUOUS = {"mode": "continuous"}


def _cfg(model_dir: Path, **over):
    return parse_config(tiny_config(model_dir, **over))


def _run(model_dir: Path, out: Path, **over):
    return execute(prepare(_cfg(model_dir, **over), out), log=lambda _m: None)


def _base(**over) -> dict:
    import yaml

    return yaml.safe_load(BASE_CONFIG) | over


def _config_error(data: dict) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(data, file="cand.yaml")
    return info.value


# --- config ------------------------------------------------------------------------------------


def test_static_is_the_default_and_keeps_the_run_key() -> None:
    source = ModelSource("m", "local", "/m", {"sha": "x"})
    plain = key_payload(parse_config(_base()), source, "cpu", "float32")
    static = key_payload(parse_config(_base(batching={"mode": "static", "block_size": 64})), source, "cpu", "float32")
    cont = key_payload(parse_config(_base(batching=CONTINUOUS)), source, "cpu", "float32")
    assert "batching" not in plain and static == plain, "a static run's key is the one it had before"
    assert cont["batching"] == {"mode": "continuous", "block_size": 32, "num_blocks": None, "max_batch_tokens": None}


@pytest.mark.parametrize("data, path, words", [
    (_base(batching={"mode": "continuous", "pages": 4}), "batching.pages", "unknown key"),
    (_base(batching={"mode": "paged"}), "batching.mode", "static"),
    (_base(batching={"mode": "continuous", "block_size": 2}), "batching.block_size", "4"),
    (_base(runner="openai", openai={"base_url": "http://127.0.0.1:1/v1"}, batching=CONTINUOUS), "batching",
     "runner: hf"),
    (_base(batching=CONTINUOUS, acceleration={"kv_cache": {"quant": "int4", "backend": "simulated"}}),
     "acceleration.kv_cache", "batching.mode: continuous"),
    (_base(batching=CONTINUOUS, acceleration={"speculative": {"method": "prompt_lookup"}}),
     "acceleration.speculative", "own cache"),
])
def test_configs_continuous_batching_cannot_honour_are_errors(data: dict, path: str, words: str) -> None:
    err = _config_error(data)
    assert err.path == path and words in err.message and err.file == "cand.yaml", str(err)


def test_the_rule_is_the_declared_capability() -> None:
    """Methods that supply a cache or generate arguments do not declare it; none is named in the check."""
    declared = {name for name, cls in all_methods().items() if cls.capabilities.continuous_batching}
    for name, cls in all_methods().items():
        caps = cls.capabilities
        if caps.context_prefill or caps.max_batch_size or not caps.prefix_reuse:
            assert name not in declared, name
    assert {"weights", "sparsity"} <= declared


def test_listed_as_a_runner_mode_by_evalrun_accelerations() -> None:
    from typer.testing import CliRunner

    from evalrun.cli import app

    res = CliRunner().invoke(app, ["accelerations"], env={"COLUMNS": "220"})
    assert res.exit_code == 0, res.output
    assert "runner modes" in res.output and "batching: {mode: MODE" in res.output and "continuous" in res.output


# --- runs on the tiny model --------------------------------------------------------------------


@pytest.fixture(scope="module")
def static_run(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The static runner's greedy run at batch size 3 (two batches): the reference."""
    return _run(tiny_model_dir, tmp_path_factory.mktemp("static"), batch_size=3)


@pytest.mark.slow
def test_continuous_matches_static_and_records_the_paged_cache(tiny_model_dir: Path, tmp_path: Path,
                                                               static_run) -> None:  # type: ignore[no-untyped-def]
    static = static_run
    cont = _run(tiny_model_dir, tmp_path / "c", batch_size=3, batching=CONTINUOUS)
    assert static.manifest["key"] != cont.manifest["key"]
    assert {k: g.output_ids for k, g in cont.generations.items()} == \
        {k: g.output_ids for k, g in static.generations.items()}, "greedy fp32: packing changes no token here"
    b = cont.manifest["batching"]
    assert b["mode"] == "continuous" and b["auto_switch_to_flash"] is False and b["attn_implementation"] == "sdpa"
    assert b["block_size"] == 32 and b["num_blocks"] == math.ceil(b["static_peak_kv_tokens"] / 32)
    assert b["max_in_flight"] > 3, "more requests in flight than the static batch of 3, in the same memory"
    assert b["steps"] > 0 and b["tokens_per_step"]["max"] <= b["max_batch_tokens"]
    assert 0 < b["kv_bytes"] <= b["cache_tensor_bytes"]
    assert static.manifest["batching"].get("mode") is None  # the static manifest is as it was
    for g in cont.generations.values():
        assert g.error is None and g.batch_size == 1 and g.started_at is not None
        assert g.prefill_seconds is not None and g.prefill_seconds > 0 and g.decode_seconds is not None
        assert len(g.itl_seconds or []) == g.new_tokens - 1
        assert g.seconds >= g.prefill_seconds + g.decode_seconds - 1e-3
    model = prepare(_cfg(tiny_model_dir), tmp_path / "x").runner
    model._ensure_loaded()
    assert model.model.config._attn_implementation == "sdpa", "the shared loaded model is restored"


def test_stops_at_end_of_sequence_like_static(tiny_model_dir: Path, tmp_path: Path,
                                              static_run) -> None:  # type: ignore[no-untyped-def]
    """With the model's end-of-sequence id set to a token it makes third, both runners stop there and
    keep the stop token. (The static runner's ids then also keep one pad token: it cuts at the
    tokenizer's eos and pad, which this test's stop token is not; the text is the same.)"""
    item, gen = min(static_run.generations.items(), key=lambda kv: (kv[1].prompt_tokens, kv[0]))  # a 96-token one
    stop = gen.output_ids[2]
    runner = prepare(_cfg(tiny_model_dir), tmp_path / "x").runner
    runner._ensure_loaded()
    config = runner.model.generation_config
    saved = config.eos_token_id
    config.eos_token_id = stop
    try:
        short = {"batch_size": 2, "generation": {"max_new_tokens": 5},  # the two shortest items, one of them `item`
                 "tasks": [{"pack": "needle_numbers", "lengths": [96], "depths": [0.0, 1.0], "values": ["integer"]}]}
        static = _run(tiny_model_dir, tmp_path / "s", **short)
        cont = _run(tiny_model_dir, tmp_path / "c", **short, batching=CONTINUOUS)
    finally:
        config.eos_token_id = saved
    assert cont.generations[item].output_ids == static.generations[item].output_ids[:3] == gen.output_ids[:3]
    assert {k: g.output for k, g in cont.generations.items()} == {k: g.output for k, g in static.generations.items()}
    for k, g in cont.generations.items():
        assert g.output_ids == static.generations[k].output_ids[:len(g.output_ids)]


def test_items_too_long_for_the_cache_and_a_crashed_loop_are_error_generations(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = _cfg(tiny_model_dir, batching={"mode": "continuous", "num_blocks": 6})  # 192 tokens: the long items fail
    prepared = prepare(cfg, tmp_path)
    out: list = []
    prepared.runner.run(prepared.request(prepared.items), out.append)
    too_long = [g for g in out if g.error]
    assert len(out) == 6 and 0 < len(too_long) < 6 and all("raise batching.num_blocks" in g.error for g in too_long)
    # a forward that raises mid-run: every request still in flight is an error, the run goes on
    calls = {"n": 0}

    def boom(_module, _args):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("kernel failed")

    handle = prepared.runner.model.model.layers[0].register_forward_pre_hook(boom)
    try:
        again: list = []
        prepared.runner.run(prepared.request([it for it in prepared.items if it.id not in {g.item_id for g in too_long}]),
                            again.append)
    finally:
        handle.remove()
    assert again and all(g.error and "kernel failed" in g.error for g in again)


def test_an_early_stop_hard_stops_the_manager(tiny_model_dir: Path, tmp_path: Path) -> None:
    prepared = prepare(_cfg(tiny_model_dir, batching=CONTINUOUS), tmp_path)

    class Stop(Exception):
        pass

    def emit(_g):  # type: ignore[no-untyped-def]
        raise Stop()

    with pytest.raises(Stop):
        prepared.runner.run(prepared.request(prepared.items), emit)
    out: list = []
    prepared.runner.run(prepared.request(prepared.items[:2]), out.append)  # the model is free again
    assert len(out) == 2 and all(g.error is None for g in out)
    assert prepared.runner.model.config._attn_implementation == "sdpa"


@pytest.mark.parametrize("name", sorted(n for n, c in all_methods().items() if c.capabilities.continuous_batching))
def test_methods_that_declare_it_run_under_continuous_batching(name: str, tiny_model_dir: Path,
                                                                tmp_path: Path) -> None:
    cls = all_methods()[name]
    try:
        result = _run(tiny_model_dir, tmp_path, batching=CONTINUOUS, acceleration={name: cls.examples[0]})
    except ConfigError as exc:  # an optional package (optimum-quanto) may be absent
        pytest.skip(str(exc))
    assert all(g.error is None for g in result.generations.values())
    assert result.manifest["effects"][name], "the method says what it did under continuous batching"


@pytest.mark.slow
def test_fixed_length_items_keep_their_length(tiny_model_dir: Path, tmp_path: Path) -> None:
    """`latency` items (max_new_tokens and ignore_eos of their own): one session per override, the end of
    sequence suppressed as the static runner's min_new_tokens does, the same tokens."""
    tasks = [{"pack": "latency", "count": 2, "shapes": [{"name": "a", "input_tokens": 60, "output_tokens": 7},
                                                        {"name": "b", "input_tokens": 80, "output_tokens": 5}]}]
    static = _run(tiny_model_dir, tmp_path / "s", tasks=tasks)
    cont = _run(tiny_model_dir, tmp_path / "c", tasks=tasks, batching=CONTINUOUS)
    assert {k: g.new_tokens for k, g in cont.generations.items()} == {"latency/a-0": 7, "latency/a-1": 7,
                                                                        "latency/b-0": 5, "latency/b-1": 5}
    assert {k: g.output_ids for k, g in cont.generations.items()} == \
        {k: g.output_ids for k, g in static.generations.items()}
    assert cont.manifest["batching"]["sessions"] == 2
