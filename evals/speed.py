"""Speed as the runs record it, summarised per run: the manifest's `speed` section.

Works from `Generation` fields only (any runner that fills them is measured the
same way) and treats missing prefill/decode times (older runs, backends
without streaming) as "not timed", never as zero.

Conventions:
- A batch's wall time (`seconds`) is shared by its items, so summing
  seconds / batch_size over items counts each batch's time once.
- Time to first token (TTFT) is `prefill_seconds`; the first token belongs to
  prefill, decode produces the other new_tokens - 1, so per-token latency is
  decode_seconds / (new_tokens - 1) and its inverse is the decode tokens/s.
- p50 and p95 use linear interpolation between order statistics
  (`evals.stats.percentile`, numpy's default).
- Context-length buckets are by prompt tokens, the edges of evals.buckets
  (powers of two, the same as the accuracy heatmaps and breakdowns).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from evalrun.evals.buckets import bucket_edge, edge_label
from evalrun.evals.stats import percentile
from evalrun.contract.types import Generation

if TYPE_CHECKING:
    from evalrun.evals.runs import RunResult

SPEED_SCHEMA = 2  # 2: power-of-two buckets (evals.buckets); 1: <=512, 513-2048, 2049-8192, >8192


def run_timing(run: RunResult) -> tuple[int, float | None, float | None]:
    """(items timed, mean seconds per item, new tokens per second) over the run's successful generations."""
    timed = [g for g in run.generations.values() if g.error is None and g.seconds > 0]
    per_item = [g.seconds / max(g.batch_size, 1) for g in timed]
    if not per_item:
        return 0, None, None
    total = sum(per_item)
    tokens = sum(g.new_tokens for g in timed)
    return len(per_item), total / len(per_item), (tokens / total if total > 0 else None)


def distribution(values: Iterable[float | None]) -> dict[str, Any]:
    """{"p50", "p95", "n"} of the values that are present; p50/p95 None when none are."""
    present = [v for v in values if v is not None]
    return {"p50": percentile(present, 50), "p95": percentile(present, 95), "n": len(present)}


def ttft(g: Generation) -> float | None:
    return g.prefill_seconds if g.error is None else None


def decode_tokens_per_second(g: Generation) -> float | None:
    """(new_tokens - 1) / decode_seconds from the raw fields (not the rounded copy in samples.jsonl)."""
    if g.error is not None or g.decode_seconds is None or g.decode_seconds <= 0 or g.new_tokens < 2:
        return None
    return (g.new_tokens - 1) / g.decode_seconds


def decode_seconds_per_token(g: Generation) -> float | None:
    tps = decode_tokens_per_second(g)
    return 1.0 / tps if tps else None


def timing_figures(generations: Iterable[Generation]) -> dict[str, Any]:
    """Throughput and latency distributions of a set of generations (a run, or one bucket of it)."""
    ok = [g for g in generations if g.error is None]
    wall = sum(g.seconds / max(g.batch_size, 1) for g in ok if g.seconds > 0)
    new_tokens = sum(g.new_tokens for g in ok)
    # aggregate decode throughput at the measured batch size: decode tokens over each batch's decode wall time
    timed = [g for g in ok if g.prefill_seconds is not None and g.seconds > 0]
    decode_wall = sum(max(g.seconds - (g.prefill_seconds or 0.0), 0.0) / max(g.batch_size, 1) for g in timed)
    decode_tokens = sum(max(g.new_tokens - 1, 0) for g in timed)
    return {
        "items": len(ok),
        "items_timed": len(timed),
        "batch_size_max": max((g.batch_size for g in ok), default=None),
        "generation_seconds": round(wall, 6),
        "items_per_second": len(ok) / wall if wall > 0 else None,
        "new_tokens": new_tokens,
        "mean_new_tokens": new_tokens / len(ok) if ok else None,
        "mean_prompt_tokens": sum(g.prompt_tokens for g in ok) / len(ok) if ok else None,
        "tokens_per_second": new_tokens / wall if wall > 0 else None,
        "decode_throughput_tokens_per_second": decode_tokens / decode_wall if decode_wall > 0 else None,
        "ttft_seconds": distribution(ttft(g) for g in ok),
        "decode_seconds_per_token": distribution(decode_seconds_per_token(g) for g in ok),
        "decode_tokens_per_second": distribution(decode_tokens_per_second(g) for g in ok),
    }


def by_bucket(generations: Iterable[Generation]) -> list[dict[str, Any]]:
    """`timing_figures` per context-length bucket, shortest first; empty buckets left out."""
    groups: dict[int, list[Generation]] = {}
    for g in generations:
        groups.setdefault(bucket_edge(g.prompt_tokens), []).append(g)
    return [{"bucket": edge_label(e), **timing_figures(groups[e])} for e in sorted(groups)]


def kv_cache_figures(model_config: Any, element_size: int | None, effects: dict[str, Any] | None,
                     longest_context_tokens: int) -> dict[str, Any] | None:
    """KV-cache bytes per token of one sequence, and at the run's longest context.

    From the model config through the runners' one KV-bytes helper (`KVLayout`):
    2 (keys and values) x layers x KV heads x head dim x element size (full
    attention assumed). When a KV method measured what it stored (its
    `kv_bytes_ratio`, as the method reads it from its effects), that ratio scales the figure.
    """
    from evalrun.runners.accel import kv_bytes_ratio
    from evalrun.runners.kv_layout import KVLayout

    if model_config is None or not element_size:
        return None
    try:
        layout = KVLayout.of(model_config)
    except (AttributeError, TypeError, ValueError, ZeroDivisionError):
        return None
    full = layout.bytes(1, int(element_size))
    measured = kv_bytes_ratio(effects or {})
    if measured is not None:
        ratio, methods = measured
        per_token, source = full * ratio, f"model config x {', '.join(methods)}'s measured stored/full ratio"
    else:
        per_token, source = float(full), "model config (2 x layers x kv heads x head dim x element size)"
    return {
        "bytes_per_token": round(per_token, 2),
        "bytes_per_token_full_precision": full,
        "source": source,
        "layers": layout.layers, "kv_heads": layout.kv_heads, "head_dim": layout.head_dim,
        "element_size": int(element_size),
        "longest_context_tokens": longest_context_tokens,
        "bytes_at_longest_context": round(per_token * longest_context_tokens),
    }


def run_speed(generations: Iterable[Generation], *, load_seconds: float | None = None,
              peak_memory: dict[str, Any] | None = None, kv_cache: dict[str, Any] | None = None) -> dict[str, Any]:
    """The manifest's `speed` section (see the module docstring for the conventions)."""
    gens = list(generations)
    return {
        "schema": SPEED_SCHEMA,
        **timing_figures(gens),
        "bucket_edges_prompt_tokens": sorted({bucket_edge(g.prompt_tokens) for g in gens}),
        "buckets": by_bucket(gens),
        "peak_memory": peak_memory,
        "kv_cache": kv_cache,
        "load_seconds": load_seconds,
    }


def longest_context(generations: Iterable[Generation]) -> int:
    """The most tokens one sequence held: prompt plus generated."""
    return max((g.prompt_tokens + g.new_tokens for g in generations if g.error is None), default=0)
