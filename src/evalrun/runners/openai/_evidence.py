"""The engine's own word on what it runs (docs/served-engines.md, 'The engine's evidence'): the KV cache it
built and the kernel it picked, read from the engine, never from the flags it was asked for, so that a flag
the server ignored is caught (evals/gate/_provenance.py).

vLLM says it in `/metrics` (`vllm:cache_config_info`) and its startup log, SGLang in `/get_server_info`,
llama.cpp in `/props` (the native server) and its log. Engine output is untrusted: each read is bounded in
bytes and seconds, and a fact is kept only when it has the expected type.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from evalrun.contract.manifest import EngineEvidence

MAX_BYTES = 1 << 20  # of one answer: vLLM's /metrics is ~100 kB
SECONDS = 5.0  # for one answer, however slowly its bytes arrive

# What a launched engine prints while loading, read from this launch's lines of server.log once it is ready.
# llama.cpp: "llama_kv_cache: size =   90.00 MiB (  4096 cells,  30 layers,  1/1 seqs), K (f16):   45.00 MiB,
# V (f16): ..."
_LLAMA_KV = re.compile(r"size\s*=\s*([\d.]+)\s*MiB\s*\(\s*(\d+)\s*cells.*?K\s*\((\w+)\):\s*([\d.]+)\s*MiB,\s*"
                       r"V\s*\((\w+)\):\s*([\d.]+)\s*MiB")
# llama.cpp: "llama_context: flash_attn    = enabled" (older builds: "= 1")
_LLAMA_FA = re.compile(r"flash_attn\s*=\s*(\w+)")
# vLLM: "CPU KV cache size: 93,184 tokens" ("GPU KV cache size" on a GPU)
_VLLM_KV = re.compile(r"(\w+) KV cache size:\s*([\d,]+)\s*tokens")
# vLLM: "Maximum concurrency for 4,096 tokens per request: 22.75x"
_VLLM_CONC = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request:\s*([\d.]+)x")
# vLLM's /metrics: 'vllm:cache_config_info{block_size="128",cache_dtype="auto",...,num_gpu_blocks="728"} 1.0'
_VLLM_INFO = re.compile(r"^vllm:cache_config_info\{([^}\n]*)\}", re.M)
_LABEL = re.compile(r'(\w+)="([^"\\\n]{0,200})"')


def kv_facts(log: str) -> dict[str, Any]:
    """The cache facts in a server log (the last of each, a relaunch's own); {} when it says none."""
    out: dict[str, Any] = {}
    if kv := _last(_LLAMA_KV, log):
        out |= {"kv_mib": float(kv[0]), "kv_cells": int(kv[1]), "k_type": kv[2], "k_mib": float(kv[3]),
                "v_type": kv[4], "v_mib": float(kv[5])}
    if fa := _last(_LLAMA_FA, log):
        out["flash_attn"] = fa[0] in ("enabled", "1", "true", "on")
    if kv := _last(_VLLM_KV, log):
        out |= {"kv_device": kv[0], "kv_tokens": int(kv[1].replace(",", ""))}
    if conc := _last(_VLLM_CONC, log):
        out |= {"max_concurrency": float(conc[1]), "at_tokens_per_request": int(conc[0].replace(",", ""))}
    return out


def _last(pattern: re.Pattern[str], text: str) -> tuple[str, ...] | None:
    found = pattern.findall(text)
    if not found:
        return None
    last = found[-1]
    return last if isinstance(last, tuple) else (last,)


def _int(value: Any) -> int | None:
    """A count an engine reported (an int, or its digits in a label), else None."""
    if isinstance(value, str) and value.isdigit() and len(value) < 16:
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _word(value: Any) -> str | None:
    return value[:40] if isinstance(value, str) and value else None


def from_log(kv: dict[str, Any]) -> dict[str, Any]:
    """kv_facts' record as evidence facts."""
    out = {"kv_tokens": kv.get("kv_tokens", kv.get("kv_cells")), "kv_mib": kv.get("kv_mib"),
           "flash_attn": kv.get("flash_attn")}
    if "k_type" in kv:
        out["cache_dtype"] = f"{kv['k_type']}/{kv['v_type']}"
    return out


def from_metrics(text: str) -> dict[str, Any]:
    """vLLM's `cache_config_info` gauge: cache dtype, block size, blocks, capacity (else blocks x block size)."""
    found = _VLLM_INFO.search(text)
    if found is None:
        return {}
    labels = dict(_LABEL.findall(found[1]))
    size, blocks = _int(labels.get("block_size")), _int(labels.get("num_gpu_blocks"))  # a CPU build's too
    return {"cache_dtype": _word(labels.get("cache_dtype")), "block_size": size, "blocks": blocks,
            "kv_tokens": _int(labels.get("kv_cache_size_tokens")) or (size * blocks if size and blocks else None)}


def from_props(data: dict[str, Any]) -> dict[str, Any]:
    """llama.cpp's GET /props: the context its slots serve."""
    settings = data.get("default_generation_settings")
    return {"n_ctx": _int(settings.get("n_ctx")) if isinstance(settings, dict) else None}


def from_server_info(data: dict[str, Any]) -> dict[str, Any]:
    """SGLang's GET /get_server_info: its server arguments, the scheduler's KV pool, and each worker's state
    (where an `auto` backend is resolved; the first worker's wins)."""
    states = data.get("internal_states")
    said = data | (states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {})
    if "kv_cache_dtype" not in said and "max_total_num_tokens" not in said:
        return {}
    return {"cache_dtype": _word(said.get("kv_cache_dtype")), "kv_tokens": _int(said.get("max_total_num_tokens")),
            "block_size": _int(said.get("page_size")), "n_ctx": _int(said.get("context_length")),
            "kernel": _word(said.get("attention_backend"))}


def evidence(*said: tuple[str, dict[str, Any]]) -> EngineEvidence | None:
    """One record of (source, facts) pairs, the first source that says a fact giving it; None: none said."""
    facts: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for source, found in said:
        for key, value in found.items():
            if value is not None and key not in facts:
                facts[key], sources[key] = value, source
    return EngineEvidence(**facts, sources=sources) if facts else None


def evidence_text(ev: EngineEvidence) -> str:
    """'KV fp8, 186,368 tokens (1,456 blocks of 128) (from /metrics)', 'KV q4_0/q4_0, ..., flash attention on (from log)'."""
    blocks = f" ({ev.blocks:,} blocks of {ev.block_size})" if ev.blocks and ev.block_size else ""
    cache = [ev.cache_dtype, ev.kv_tokens is not None and f"{ev.kv_tokens:,} tokens{blocks}",
             ev.kv_mib is not None and f"{ev.kv_mib:g} MiB"]
    parts = [f"KV {', '.join(str(c) for c in cache if c)}"] if any(cache) else []
    parts += [f"flash attention {'on' if ev.flash_attn else 'off'}"] if ev.flash_attn is not None else []
    parts += [f"attention {ev.kernel}"] if ev.kernel else []
    parts += [f"context {ev.n_ctx:,}"] if ev.n_ctx is not None else []
    return ", ".join(parts) + f" (from {', '.join(dict.fromkeys(ev.sources.values()))})"


async def _read(client: Any, url: str) -> str | None:
    """An answer's first MAX_BYTES as text; None: not 200, or no answer within SECONDS."""
    import httpx

    async def body() -> str | None:
        async with client.stream("GET", url) as resp:
            if resp.status_code != 200:
                return None
            data = b""
            async for chunk in resp.aiter_bytes():
                data += chunk
                if len(data) >= MAX_BYTES:
                    break
            return data[:MAX_BYTES].decode("utf-8", "replace")

    try:
        return await asyncio.wait_for(body(), SECONDS)
    except (httpx.HTTPError, asyncio.TimeoutError):
        return None


def _json(text: str | None) -> dict[str, Any] | None:
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


async def read_engine(root: str) -> tuple[dict[str, Any] | None, list[tuple[str, dict[str, Any]]]]:
    """(llama.cpp's /props as the runner keeps it, or None; what /metrics, /get_server_info and /props say)."""
    import httpx

    async with httpx.AsyncClient(timeout=SECONDS) as client:
        metrics, info, props = [await _read(client, f"{root}{path}")
                                for path in ("/metrics", "/get_server_info", "/props")]
    said = [("/metrics", from_metrics(metrics or "")), ("/get_server_info", from_server_info(_json(info) or {}))]
    data = _json(props)
    if data is None:
        return None, said
    ctx = from_props(data)["n_ctx"]
    kept = {k: data[k] for k in ("build_info", "model_path", "total_slots") if k in data}
    return kept | ({"n_ctx": ctx} if ctx is not None else {}), [*said, ("/props", {"n_ctx": ctx})]


def stored_evidence(manifest: dict[str, Any]) -> EngineEvidence | None:
    """A run's evidence as stored; an older launched run's from its log facts (`server.launched.kv`)."""
    if isinstance(manifest.get("evidence"), dict):
        return EngineEvidence.model_validate(manifest["evidence"])
    launched = (manifest.get("server") or {}).get("launched")
    return evidence(("log", from_log(launched.get("kv") or {}))) if isinstance(launched, dict) else None
