"""Continuous batching over a paged KV cache: the hf runner's `batching: {mode: continuous}`.

The choices are in docs/accelerations.md, 'Runner mode: continuous batching': the cache is sized to the KV
memory of the static runner's largest batch of this run, so a comparison is at the same memory and any gain
is from packing; timing follows the openai runner's convention for concurrent requests.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from evalrun.contract.generation import GenerationSettings
from evalrun.contract.types import Generation, GenerationOverride, Item
from evalrun.runners.accel.base import Acceleration
from evalrun.runners.accel.kv_layout import KVLayout, element_size
from evalrun.runners.base import RunRequest


class BatchingSettings(BaseModel):
    """The `batching:` block of a config (runner: hf). `static`: length-sorted, left-padded batches of
    `batch_size` (the default, and every run stored before this key existed). `continuous`: transformers'
    continuous batching over a paged KV cache, sized by the keys below."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    mode: Literal["static", "continuous"] = "static"
    # tokens per KV block (transformers' page_size): the unit the cache is handed out in
    block_size: int = Field(default=32, ge=4, le=4096)
    # blocks in the cache; None: the KV memory of the static runner's largest batch (same memory)
    num_blocks: int | None = Field(default=None, ge=1, le=1 << 24)
    # tokens one forward step takes (prompt chunks and one per decoding request); None: the run's longest prompt
    max_batch_tokens: int | None = Field(default=None, ge=1, le=1 << 20)


SCHEDULER = "evalrun_fifo_counted"  # transformers' FIFO scheduler, counting what each step held
RESULT_POLL_S = 1.0  # how long one wait for a finished request lasts before the loop checks the thread


class Host(Protocol):
    """What the hf runner lends a continuous run (runners/hf/runner.py: HFRunner)."""

    model: Any
    tokenizer: Any
    device: str
    accelerations: list[Acceleration]
    batch_size: int
    batch_seed: int | None
    prefix_reuse: bool

    def render(self, item: Item) -> str: ...
    def batches(self, items: list[Item], request: RunRequest) -> list[list[Item]]: ...
    def _error(self, item: Item, exc: BaseException) -> Generation: ...


@lru_cache(maxsize=1)
def _register_scheduler() -> type:
    """A FIFO scheduler that records each step's requests, query tokens and requests in flight,
    registered under SCHEDULER (the config's `scheduler_type` names it): the manager builds it."""
    from transformers.generation.continuous_batching.scheduler import SCHEDULER_MAPPING, FIFOScheduler

    class CountingFIFO(FIFOScheduler):
        """Also keeps the token times of a request preempted when the cache ran out (soft reset: its
        cache freed, the request requeued with its tokens so far as prompt), which its final output lacks."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.counts = StepCounts()
            self._last: dict[str, list[float]] = {}

        def schedule_batch(self, token_budget: int, cache_budget: int) -> Any:
            out = super().schedule_batch(token_budget, cache_budget)
            scheduled, _fast, q_tokens, _kv = out
            if scheduled:
                self.counts.add(len(scheduled), int(q_tokens), len(self.active_requests))
            return out

        def finish_request(self, request_id: str) -> None:
            state = self.active_requests.get(request_id)
            if state is not None:
                self._last[request_id] = list(state._timestamps)
            super().finish_request(request_id)

        def add_waiting_request(self, state: Any) -> None:
            if state._true_initial_tokens:  # a preempted request coming back
                self.counts.preemptions += 1
                self.counts.earlier.setdefault(state.request_id, []).extend(self._last.pop(state.request_id, []))
            super().add_waiting_request(state)

    SCHEDULER_MAPPING[SCHEDULER] = CountingFIFO
    return CountingFIFO


@dataclass
class StepCounts:
    """What the forward steps held: requests scheduled, query tokens, requests with cache (in flight)."""

    steps: int = 0
    tokens: int = 0
    max_tokens: int = 0
    max_requests: int = 0
    max_in_flight: int = 0
    preemptions: int = 0
    earlier: dict[str, list[float]] = field(default_factory=dict)  # token times before a preemption, by request

    def add(self, requests: int, tokens: int, in_flight: int) -> None:
        self.steps += 1
        self.tokens += tokens
        self.max_tokens = max(self.max_tokens, tokens)
        self.max_requests = max(self.max_requests, requests)
        self.max_in_flight = max(self.max_in_flight, in_flight)

    def merge(self, other: "StepCounts") -> None:
        self.steps += other.steps
        self.tokens += other.tokens
        self.max_tokens = max(self.max_tokens, other.max_tokens)
        self.max_requests = max(self.max_requests, other.max_requests)
        self.max_in_flight = max(self.max_in_flight, other.max_in_flight)
        self.preemptions += other.preemptions


@dataclass
class CachePlan:
    """The paged cache of a run: blocks of `block_size` tokens, and the tokens one forward step takes."""

    block_size: int
    num_blocks: int
    max_batch_tokens: int
    basis: str  # how num_blocks was chosen, in words
    static_tokens: int  # KV tokens the static runner's largest batch of this run holds (the same-memory point)

    @property
    def tokens(self) -> int:
        return self.num_blocks * self.block_size


def static_peak_tokens(batches: list[list[Item]], prompt_len: Callable[[Item], int], default_new: int) -> int:
    """KV tokens the static runner's largest batch holds: left-padded rows of the batch's longest
    prompt plus the answer, for every item of the batch."""
    peak = 0
    for batch in batches:
        override = batch[0].generation
        new = override.max_new_tokens if override else default_new
        peak = max(peak, len(batch) * (max(prompt_len(it) for it in batch) + new))
    return peak


def plan_cache(settings: BatchingSettings, batches: list[list[Item]], prompt_len: Callable[[Item], int],
               default_new: int, batch_size: int) -> CachePlan:
    """The cache and step size of a run from `batching:` settings and the static runner's batches."""
    block = settings.block_size
    longest = max((prompt_len(it) for b in batches for it in b), default=1)
    peak = static_peak_tokens(batches, prompt_len, default_new)
    if settings.num_blocks:
        blocks, basis = settings.num_blocks, "configured (batching.num_blocks)"
    else:
        blocks = max(1, math.ceil(peak / block))
        basis = (f"the static runner's largest batch at batch_size {batch_size}: {peak} KV tokens "
                 f"(items x (longest prompt + max_new_tokens)), rounded up to whole blocks")
    steps = settings.max_batch_tokens or max(longest, block)
    return CachePlan(block, blocks, steps, basis, peak)


@dataclass
class ContinuousRun:
    """One run's continuous batching: its plan and what its sessions did (for the manifest)."""

    settings: BatchingSettings
    configured: int | str  # the config's batch_size, recorded beside the batch size as run
    plan: CachePlan | None = None
    counts: StepCounts = field(default_factory=StepCounts)
    sessions: int = 0
    attn_implementation: str | None = None
    cache_bytes: int | None = None
    too_long: int = 0
    _ids: dict[str, list[int]] = field(default_factory=dict)

    def manifest(self, host: Host) -> dict[str, Any]:
        """The manifest's `batching` section (the static keys kept, so readers of either mode agree)."""
        plan = self.plan
        out: dict[str, Any] = {
            "mode": "continuous", "configured": self.configured, "final": host.batch_size,
            "oom_halvings": 0, "order": "length" if host.batch_seed is None else "shuffled", "seed": host.batch_seed,
            "block_size": plan.block_size if plan else self.settings.block_size,
            "num_blocks": plan.num_blocks if plan else self.settings.num_blocks,
            "num_blocks_basis": plan.basis if plan else None,
            "kv_tokens": plan.tokens if plan else None,
            "static_peak_kv_tokens": plan.static_tokens if plan else None,
            "max_batch_tokens": plan.max_batch_tokens if plan else self.settings.max_batch_tokens,
            "max_in_flight": self.counts.max_in_flight, "max_requests_per_step": self.counts.max_requests,
            "steps": self.counts.steps, "preemptions": self.counts.preemptions,
            "tokens_per_step": {"mean": round(self.counts.tokens / self.counts.steps, 2) if self.counts.steps else None,
                                "max": self.counts.max_tokens},
            "attn_implementation": self.attn_implementation, "auto_switch_to_flash": False,
            "prefix_sharing": bool(host.prefix_reuse), "sessions": self.sessions, "items_too_long": self.too_long,
        }
        if host.model is not None and plan is not None:
            out["kv_bytes"] = KVLayout.of(host.model.config).bytes(plan.tokens, element_size(host.model.dtype))
            out["cache_tensor_bytes"] = self.cache_bytes
        return out

    # --- running -----------------------------------------------------------------------------

    def ids(self, host: Host, item: Item) -> list[int]:
        """The item's prompt token ids exactly as the static runner feeds them (no special tokens added)."""
        if item.id not in self._ids:
            self._ids[item.id] = host.tokenizer(host.render(item), add_special_tokens=False)["input_ids"]
        return self._ids[item.id]

    def run(self, host: Host, request: RunRequest, emit: Callable[[Generation], None]) -> None:
        """Generate the request's items, one manager session per generation override (fixed output lengths),
        each result handed to `emit` the moment its request finishes."""
        default_new = request.generation.max_new_tokens
        if self.plan is None:  # sized on the whole run, so every session of it (resumes too) gets one cache
            self.plan = plan_cache(self.settings, host.batches(request.every, request),
                                   lambda it: len(self.ids(host, it)), default_new, host.batch_size)
        groups: dict[GenerationOverride | None, list[Item]] = {}
        for batch in host.batches(request.items, request):  # the static order: length-sorted, or shuffled by seed
            groups.setdefault(batch[0].generation, []).extend(batch)
        for override, members in groups.items():
            fits = []
            for item in members:
                need = len(self.ids(host, item)) + (override.max_new_tokens if override else default_new)
                if need > self.plan.tokens:
                    self.too_long += 1
                    emit(host._error(item, MemoryError(
                        f"needs {need} KV tokens (prompt + max_new_tokens); the paged cache holds {self.plan.tokens} "
                        f"({self.plan.num_blocks} blocks of {self.plan.block_size}): raise batching.num_blocks")))
                else:
                    fits.append(item)
            if fits:
                self._session(host, fits, request.generation, override, emit)

    def _session(self, host: Host, items: list[Item], g: GenerationSettings, override: GenerationOverride | None,
                 emit: Callable[[Generation], None]) -> None:
        """One manager, started for these items and stopped after them (hard-stopped when `emit` raises:
        an early stop leaves the unfinished requests ungenerated, to be resumed)."""
        from transformers.generation.continuous_batching.utils import WorkloadHints

        assert self.plan is not None
        # its own console handler: advisories, and a failed step's traceback, which every request it
        # failed carries as its error generation
        logging.getLogger("ContinuousBatchingLogger").setLevel(logging.CRITICAL)
        model = host.model
        original = model.config._attn_implementation
        gen_config, eos = self._generation_config(host, g, override)
        max_new = override.max_new_tokens if override else int(gen_config.max_new_tokens)
        hints = WorkloadHints(max_prompt_length=max(len(self.ids(host, it)) for it in items),
                              max_generated_length=max_new, num_requests=len(items))
        manager = model.init_continuous_batching(generation_config=gen_config, workload_hints=hints,
                                                 continuous_batching_config=self._cb_config(host, g))
        self.sessions += 1
        finished = False
        try:
            self.attn_implementation = model.config._attn_implementation
            manager.start()
            finished = self._collect(host, manager, items, max_new, eos, emit)
        finally:
            processor = manager.batch_processor
            if processor is not None:
                self.counts.merge(getattr(processor.scheduler, "counts", StepCounts()))
                self.cache_bytes = int(processor.cache.cache_tensor.numel())
            manager.stop(block=True, hard_stop=not finished)
            manager.destroy()
            if model.config._attn_implementation != original:  # the loaded model is shared by other runs
                model.set_attn_implementation(original)
        for accel in host.accelerations:
            accel.observe(model, None)

    def _collect(self, host: Host, manager: Any, items: list[Item], max_new: int, eos: Any,
                 emit: Callable[[Generation], None]) -> bool:
        """Submit every item and emit each as it finishes; True when all finished (none left in flight)."""
        pending = {it.id: it for it in items}
        started_at = time.time()
        start = time.perf_counter()
        for item in items:
            manager.add_request(self.ids(host, item), request_id=item.id, max_new_tokens=max_new,
                                record_timestamps=True, eos_token_id=eos)
        while pending:
            result = manager.get_result(timeout=RESULT_POLL_S)
            if result is None:
                if not manager.is_running():
                    break
                continue
            finished = pending.get(result.request_id)
            if finished is None or not result.is_finished():
                continue
            del pending[finished.id]
            counts = getattr(getattr(manager.batch_processor, "scheduler", None), "counts", None)
            earlier = counts.earlier.get(finished.id, []) if isinstance(counts, StepCounts) else []
            emit(self._generation(host, finished, result, earlier, start, started_at))
        if pending:
            fatal = manager.background_thread_status.fatal_error
            why = RuntimeError(f"continuous batching stopped before this request finished"
                               f"{f': {type(fatal).__name__}: {fatal}' if fatal else ''}")
            for item in pending.values():
                emit(host._error(item, why))
        return True

    def _generation(self, host: Host, item: Item, result: Any, earlier: list[float], start: float,
                    started_at: float) -> Generation:
        """A finished request as the static runner writes a generation (a time per token: `earlier` holds
        those of the tokens made before a preemption, which the final output does not carry)."""
        if result.error is not None:
            return host._error(item, RuntimeError(result.error))
        new = list(result.generated_tokens)
        stamps = [*earlier, *(result.timestamps or [])]
        first = stamps[0] if stamps else None
        last = stamps[len(new) - 1] if len(stamps) >= len(new) and new else None
        end = result.lifespan[1] if result.lifespan[1] > 0 else time.perf_counter()
        return Generation(item_id=item.id, pack=item.pack, prompt_hash=item.prompt_hash,
                          output=host.tokenizer.decode(new, skip_special_tokens=True), output_ids=new,
                          prompt_tokens=len(self.ids(host, item)), new_tokens=len(new), seconds=round(end - start, 4),
                          batch_size=1, prefill_seconds=round(first - start, 6) if first is not None else None,
                          decode_seconds=round(last - first, 6) if first is not None and last is not None else None,
                          started_at=round(started_at, 6),
                          itl_seconds=[round(b - a, 6) for a, b in zip(stamps, stamps[1:len(new)])] if stamps else None)

    def _generation_config(self, host: Host, g: GenerationSettings,
                           override: GenerationOverride | None) -> tuple[Any, Any]:
        """The model's generation config with the run's decoding, and the stop ids as the static runner
        stops: the config's end-of-sequence ids plus the tokenizer's eos and pad (-1: none, ignore_eos)."""
        tok = host.tokenizer
        cfg = copy.deepcopy(host.model.generation_config)
        sampling = g.sampling
        configured = cfg.eos_token_id if isinstance(cfg.eos_token_id, list) else [cfg.eos_token_id]
        stops = sorted({t for t in (*configured, tok.eos_token_id, tok.pad_token_id) if t is not None and t >= 0})
        cfg.update(max_new_tokens=g.max_new_tokens, do_sample=sampling,
                   temperature=g.temperature if sampling else None, top_p=g.top_p if sampling else None,
                   top_k=None, pad_token_id=tok.pad_token_id, eos_token_id=stops or None)
        if override and override.ignore_eos:
            cfg.suppress_tokens = stops or None  # min_new_tokens = max_new_tokens in the static runner
            return cfg, -1
        return cfg, stops or -1

    def _cb_config(self, host: Host, g: GenerationSettings) -> Any:
        from transformers import ContinuousBatchingConfig

        _register_scheduler()
        assert self.plan is not None
        return ContinuousBatchingConfig(page_size=self.plan.block_size, num_blocks=self.plan.num_blocks,
                                        max_batch_tokens=self.plan.max_batch_tokens, auto_switch_to_flash=False,
                                        allow_block_sharing=bool(host.prefix_reuse), scheduler_type=SCHEDULER,
                                        seed=g.seed if g.sampling else None)
