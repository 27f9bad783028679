"""Speed as the runs record it, summarised per run: the manifest's `speed` section (metrics: evals/timing/latency.py).

Missing timings are "not timed", never zero. A batch's wall time (`seconds`) is shared by its items, so summing
seconds / batch_size counts each batch once. Context buckets are evals.compare's, as in the accuracy heatmaps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

from evalrun.evals.timing import SLO, latency
from evalrun.evals.compare import bucket_edge, edge_label
from evalrun.contract.types import Generation, Item

if TYPE_CHECKING:
    from evalrun.evals.results import RunResult

# 3: vLLM definitions (ttft/tpot/itl/e2el with p50/p90/p95/p99, throughput over the wall clock,
#    per pack and shape); 2: power-of-two buckets; 1: <=512, 513-2048, 2049-8192, >8192
SPEED_SCHEMA = 3
DEFINITIONS = "vLLM bench serve (TTFT, TPOT, ITL, E2EL, request and output-token throughput over the wall clock)"


def run_timing(run: RunResult) -> tuple[int, float | None, float | None]:
    """(items timed, mean seconds per item, new tokens per second) over the run's successful generations."""
    timed = [g for g in run.generations.values() if g.error is None and g.seconds > 0]
    per_item = [g.seconds / max(g.batch_size, 1) for g in timed]
    if not per_item:
        return 0, None, None
    total = sum(per_item)
    tokens = sum(g.new_tokens for g in timed)
    return len(per_item), total / len(per_item), (tokens / total if total > 0 else None)


def timing_figures(generations: Iterable[Generation], percentiles: Sequence[float] = latency.PERCENTILES,
                   slo: SLO | None = None) -> dict[str, Any]:
    """The request metrics, counts and the aggregate decode rate that estimates scale by."""
    gens = list(generations)
    ok = [g for g in gens if g.error is None]
    new_tokens = sum(g.new_tokens for g in ok)
    timed = [g for g in ok if g.prefill_seconds is not None and g.seconds > 0]
    decode_wall = sum(max(g.seconds - (g.prefill_seconds or 0.0), 0.0) / max(g.batch_size, 1) for g in timed)
    decode_tokens = sum(max(g.new_tokens - 1, 0) for g in timed)
    return {"items": len(ok), "items_timed": len(timed),
            "batch_size_max": max((g.batch_size for g in ok), default=None),
            "generation_seconds": round(sum(g.seconds / max(g.batch_size, 1) for g in ok if g.seconds > 0), 6),
            "new_tokens": new_tokens, "mean_new_tokens": new_tokens / len(ok) if ok else None,
            "mean_prompt_tokens": sum(g.prompt_tokens for g in ok) / len(ok) if ok else None,
            "decode_throughput_tokens_per_second": decode_tokens / decode_wall if decode_wall > 0 else None,
            **latency.request_metrics(gens, percentiles, slo)}


def by_group(generations: Iterable[Generation], items: Iterable[Item] = (),
             percentiles: Sequence[float] = latency.PERCENTILES, slo: SLO | None = None) -> dict[str, list[dict[str, Any]]]:
    """`timing_figures` per pack, latency shape (items that have one) and prompt-length bucket (the manifest's
    `packs`, `shapes`, `buckets`)."""
    shape = {it.id: it.meta.shape for it in items if it.meta.shape}
    groups: dict[str, dict[str, list[Generation]]] = {"packs": {}, "shapes": {}, "buckets": {}}
    by_edge: dict[int, list[Generation]] = {}
    for g in generations:
        groups["packs"].setdefault(g.pack, []).append(g)
        if g.item_id in shape:
            groups["shapes"].setdefault(shape[g.item_id], []).append(g)
        by_edge.setdefault(bucket_edge(g.prompt_tokens), []).append(g)
    groups["buckets"] = {edge_label(e): by_edge[e] for e in sorted(by_edge)}
    key = {"packs": "pack", "shapes": "shape", "buckets": "bucket"}
    return {kind: [{key[kind]: name, **timing_figures(gens, percentiles, slo)} for name, gens in members.items()]
            for kind, members in groups.items()}


def kv_cache_figures(model_config: Any, element_size: int | None, effects: dict[str, Any] | None,
                     longest_context_tokens: int) -> dict[str, Any] | None:
    """KV-cache bytes per token (full attention assumed), scaled by a KV method's measured ratio where recorded."""
    from evalrun.runners.accel import kv_bytes_ratio
    from evalrun.runners.accel.kv_layout import KVLayout

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
    return {"bytes_per_token": round(per_token, 2), "bytes_per_token_full_precision": full, "source": source,
            "layers": layout.layers, "kv_heads": layout.kv_heads, "head_dim": layout.head_dim,
            "element_size": int(element_size), "longest_context_tokens": longest_context_tokens,
            "bytes_at_longest_context": round(per_token * longest_context_tokens)}


def run_speed(generations: Iterable[Generation], *, items: Iterable[Item] = (), load_seconds: float | None = None,
              peak_memory: dict[str, Any] | None = None, kv_cache: dict[str, Any] | None = None,
              clock: str | None = None) -> dict[str, Any]:
    gens = list(generations)
    return {"schema": SPEED_SCHEMA, "definitions": DEFINITIONS, "clock": clock,
            "percentiles": list(latency.PERCENTILES), **timing_figures(gens),
            "bucket_edges_prompt_tokens": sorted({bucket_edge(g.prompt_tokens) for g in gens}),
            **by_group(gens, items), "peak_memory": peak_memory, "kv_cache": kv_cache, "load_seconds": load_seconds}


def longest_context(generations: Iterable[Generation]) -> int:
    """The most tokens one sequence held: prompt plus generated."""
    return max((g.prompt_tokens + g.new_tokens for g in generations if g.error is None), default=0)
