"""A served candidate's label: its engine, version and the flags that differ from the baseline's,
not "none" (its acceleration is in the engine's flags, not in `acceleration:`)."""

from __future__ import annotations

from typing import Any

from evalrun.evals.config import load_config
from evalrun.evals.speed import engine_label, flag_changes, method_label
from tests.conftest import CONFIGS


def _manifest(name: str, version: str = "llama-cpp-python 0.3.36") -> dict[str, Any]:
    config = load_config(CONFIGS / "engines" / f"{name}.yaml")
    assert config.server is not None
    return {"runner": "openai", "key": name, "config": config.model_dump(mode="json"),
            "model": {"identity": {"server_launch": config.server.launch_identity(version)}}}


def test_a_served_candidate_is_labelled_by_its_engine_and_the_flags_that_differ() -> None:
    base, q4 = _manifest("llamacpp-f16"), _manifest("llamacpp-q4kv")
    assert flag_changes(base, q4) == ["--type_k 2", "--type_v 2", "--flash_attn true"]
    assert method_label(q4, base) == "llama-cpp-python 0.3.36: --type_k 2 --type_v 2 --flash_attn true"
    assert method_label(_manifest("llamacpp-f16-fa"), base) == "llama-cpp-python 0.3.36: --flash_attn true"
    assert method_label(base) == "llama-cpp-python 0.3.36"  # the baseline: the engine alone
    newer = _manifest("llamacpp-f16", "llama-cpp-python 0.3.37") | {"key": "other"}
    assert method_label(newer, base) == ("llama-cpp-python 0.3.37: the baseline flags "
                                         "(baseline: llama-cpp-python 0.3.36)")


def test_extra_body_and_declared_engine_args_count_as_flags() -> None:
    base = {"runner": "openai", "key": "a", "config": {"engine": {"name": "vllm", "args": []},
                                                       "openai": {"extra_body": {"top_k": 1}}}}
    cand = {"runner": "openai", "key": "b", "config": {"engine": {"name": "vllm", "args": ["--kv-cache-dtype", "fp8"]},
                                                       "openai": {"extra_body": {"top_k": 2}}}}
    assert engine_label(cand, base) == "vllm: --kv-cache-dtype fp8 body.top_k 2"
    assert engine_label({"runner": "hf", "config": {}}) is None
    assert method_label({"runner": "hf", "config": {"acceleration": {}}}) == "none"
