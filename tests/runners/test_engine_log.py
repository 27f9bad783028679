"""The cache facts a launched engine prints while loading (src/evalrun/runners/openai/_evidence.py), read from the
lines both engines write, and shown as the served candidate's proof that its KV flag took effect."""

from __future__ import annotations

from evalrun.evals.speed import effects_facts
from evalrun.runners.openai import evidence, evidence_text, from_log, kv_facts

# vLLM 0.32 (vllm/v1/core/kv_cache_utils.py update_kv_cache_capacity), as logged by the CPU build
VLLM = ("(EngineCore pid=123) INFO 12-03 11:50:01 [kv_cache_utils.py:1300] CPU KV cache size: 186,368 tokens, "
        "Maximum concurrency for 4,096 tokens per request: 45.50x\n")
# llama.cpp as built into llama-cpp-python 0.3.36, a q4_0 cache with flash attention
LLAMA = ("llama_context: flash_attn    = enabled\n"
         "llama_kv_cache:        CPU KV buffer size =    25.31 MiB\n"
         "llama_kv_cache: size =   25.31 MiB (  4096 cells,  30 layers,  1/1 seqs), K (q4_0):   12.66 MiB, "
         "V (q4_0):   12.66 MiB\n")


def test_vllm_capacity_is_read() -> None:
    facts = kv_facts(VLLM)
    assert facts == {"kv_device": "CPU", "kv_tokens": 186368, "max_concurrency": 45.5, "at_tokens_per_request": 4096}
    assert _text(facts) == "KV 186,368 tokens (from log)"


def test_llama_cache_types_and_sizes_are_read() -> None:
    facts = kv_facts(LLAMA)
    assert facts["k_type"] == facts["v_type"] == "q4_0" and facts["kv_mib"] == 25.31 and facts["kv_cells"] == 4096
    assert facts["flash_attn"] is True
    assert _text(facts) == "KV q4_0/q4_0, 4,096 tokens, 25.31 MiB, flash attention on (from log)"


def test_the_last_launch_counts_and_silence_is_said() -> None:
    """A log holds every launch of the run: the last one's facts are this launch's."""
    earlier = LLAMA.replace("q4_0", "f16").replace("enabled", "disabled")
    assert kv_facts(earlier + LLAMA)["k_type"] == "q4_0"
    assert kv_facts("server started\n") == {}
    launched = {"runner": "openai", "server": {"launched": {"kv": {}}}}
    assert effects_facts(launched) == ["engine: said nothing of its cache or kernels"]
    assert effects_facts(launched | {"server": {"launched": {"kv": kv_facts(VLLM)}}}) == [
        "engine: KV 186,368 tokens (from log)"]  # an older run: its launch's log facts
    assert effects_facts({"runner": "hf"}) == []  # in process: the methods' own effects say it


def _text(facts: dict) -> str:
    said = evidence(("log", from_log(facts)))
    assert said is not None
    return evidence_text(said)
