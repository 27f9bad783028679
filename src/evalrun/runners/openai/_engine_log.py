"""What a launched engine says in its own log about the cache it built: the proof that a KV flag took
effect (llama.cpp's K and V types and sizes, vLLM's KV capacity in tokens), read once it is ready.

Both engines print this while loading, before their port answers; evalrun never asks for it over HTTP
(neither serves it there). A log that says none of it gives an empty record, and the report says
"not in the server's log" rather than guessing from the flags."""

from __future__ import annotations

import re
from typing import Any

# llama.cpp: "llama_kv_cache: size =   90.00 MiB (  4096 cells,  30 layers,  1/1 seqs), K (f16):   45.00 MiB, V (f16): ..."
_LLAMA_KV = re.compile(r"size\s*=\s*([\d.]+)\s*MiB\s*\(\s*(\d+)\s*cells.*?K\s*\((\w+)\):\s*([\d.]+)\s*MiB,\s*"
                       r"V\s*\((\w+)\):\s*([\d.]+)\s*MiB")
# llama.cpp: "llama_context: flash_attn    = enabled" (older builds: "= 1")
_LLAMA_FA = re.compile(r"flash_attn\s*=\s*(\w+)")
# vLLM: "CPU KV cache size: 93,184 tokens" ("GPU KV cache size" on a GPU)
_VLLM_KV = re.compile(r"(\w+) KV cache size:\s*([\d,]+)\s*tokens")
# vLLM: "Maximum concurrency for 4,096 tokens per request: 22.75x"
_VLLM_CONC = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request:\s*([\d.]+)x")


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


def kv_text(facts: dict[str, Any]) -> str:
    """'KV q4_0/q4_0 12.66 MiB for 4096 cells, flash attention on' or 'KV capacity 186,368 tokens (CPU)'."""
    parts = []
    if "k_type" in facts:
        parts.append(f"KV {facts['k_type']}/{facts['v_type']} {facts['kv_mib']:g} MiB for {facts['kv_cells']} cells")
    if "flash_attn" in facts:
        parts.append(f"flash attention {'on' if facts['flash_attn'] else 'off'}")
    if "kv_tokens" in facts:
        parts.append(f"KV capacity {facts['kv_tokens']:,} tokens ({facts['kv_device']})")
    return ", ".join(parts)


def _last(pattern: re.Pattern[str], text: str) -> tuple[str, ...] | None:
    found = pattern.findall(text)
    if not found:
        return None
    last = found[-1]
    return last if isinstance(last, tuple) else (last,)


__all__ = ["kv_facts", "kv_text"]
