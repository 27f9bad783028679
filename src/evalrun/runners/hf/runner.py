"""The `hf` runner: transformers in process, on the local GPU or CPU.

Items are planned into left-padded batches by prompt tokens (runners/batch_plan.py).
A batch that raises is retried item by item, and an item that still raises becomes
an `error` generation: a candidate that crashes on some inputs is a finding, not a
harness failure.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterable

from evalrun.contract.types import Generation, Item
from evalrun.runners.accel.base import Acceleration, cache_kwarg
from evalrun.runners.base import Runner, RunRequest, frozen_heap, render_chat
from evalrun.runners.batch_plan import PLAN, SHUFFLED, PaddingTally, WorkUnit, plan_batches
from evalrun.runners.accel.kv_layout import KVLayout, element_size
from evalrun.runners.hf.forced_read import forced_one_pass
from evalrun.runners.hf._continuous import BatchingSettings
from evalrun.runners.logprobs import capture_setup, hand_over
from evalrun.runners.hf.prefix import SharedPrefix, group_by_prefix, prefill, split_at_question
from evalrun.runners.models import ModelSource, device_kind, load_model, load_tokenizer
from evalrun.runners.hf.token_clock import CLOCK_CPU, CLOCK_CUDA, TokenClock

MAX_PLAUSIBLE_CONTEXT = 1 << 24  # larger values are "no limit" placeholders, not a context
AUTO_START = 8  # batch size "auto" before the model is loaded, and on the CPU
AUTO_MAX = 256


def read_model_config(source: ModelSource) -> Any:
    """The model's config (a small JSON file) without its weights."""
    from transformers import AutoConfig

    from evalrun.runners.models import local_dir

    return AutoConfig.from_pretrained(local_dir(source))


def auto_batch_size(model: Any, device: str, items: list[Item], max_new_tokens: int) -> int:
    """The largest batch whose KV cache and activations fit in 70% of free accelerator memory
    (a starting point: out-of-memory halving corrects an optimistic estimate)."""
    if device != "cuda":
        return AUTO_START
    import torch

    free, _total = torch.cuda.mem_get_info()
    cfg = model.config.get_text_config(decoder=True)
    elem = element_size(model.dtype)
    longest = max(((it.meta.context_tokens or 0) for it in items), default=0) or 2048
    tokens = longest + max_new_tokens
    kv = KVLayout.of(model.config).bytes(tokens, elem)
    # prefill activations: hidden states and the MLP's intermediate for every prompt token, one row of logits
    act = tokens * (4 * cfg.hidden_size + 2 * getattr(cfg, "intermediate_size", 4 * cfg.hidden_size)) * elem
    act += 2 * cfg.vocab_size * 4
    return max(1, min(AUTO_MAX, int(0.7 * free // (kv + act))))


class HFRunner(Runner):
    """Generates answers for Items with one loaded model and a set of accelerations."""

    reads_forced = True
    one_pass_forcing: bool = True  # runners/hf/forced_read.py where every method allows it; False: the decode path
    watch_seconds: float = 0.0  # spent computing `watched` records (teacher forcing's cost, not generation's)

    def __init__(
        self,
        source: ModelSource,
        device: str,
        dtype: str,
        accelerations: list[Acceleration],
        batch_size: int | str = 4,
        prefix_reuse: bool = False,
        batching: BatchingSettings | None = None,
    ):
        super().__init__(accelerations)
        self.source = source
        self.device = device
        self.dtype = dtype
        self.capabilities = [a.run_capabilities() for a in self.accelerations]
        self.limits = [c.max_batch_size for c in self.capabilities if c.max_batch_size]
        self.batch_configured = batch_size
        self.batch_auto = batch_size == "auto"
        self.batch_size = min([AUTO_START if self.batch_auto else int(batch_size), *self.limits])
        self.oom_halvings = 0
        self.batch_seed: int | None = None  # the last plan's seed (the manifest's batching.seed)
        self.padding = PaddingTally()
        self.prefix_reuse = prefix_reuse
        self.prefix_stats: dict[str, Any] = {"documents": 0, "questions": 0, "tokens_saved": 0}
        self._token_ids: dict[str, list[int]] = {}  # item id -> ids, from grouping, reused when generating
        self.model: Any = None
        self.tokenizer: Any = load_tokenizer(source)
        self._max_context: int | None | bool = False  # False: not read yet
        self.continuous: Any = None  # batching: {mode: continuous} (runners/hf/_continuous.py)
        if batching is not None and batching.mode == "continuous":
            from evalrun.runners.hf._continuous import ContinuousRun

            self.continuous = ContinuousRun(batching, batch_size)

    def manifest_extras(self) -> dict[str, Any]:
        """Batch sizes as run (after any out-of-memory halving), how batches were planned and what
        their prefill computed (padding included), and what prefix reuse shared."""
        if self.continuous is not None:
            return {"batching": self.continuous.manifest(self), "device_kind": device_kind(self.device)}
        return {"device_kind": device_kind(self.device),
            "batching": {"configured": self.batch_configured, "final": self.batch_size,
                         "oom_halvings": self.oom_halvings,
                         "order": "length" if self.batch_seed is None else "shuffled", "seed": self.batch_seed,
                         "plan": PLAN if self.batch_seed is None else SHUFFLED, **self.padding.record()},
            **({"prefix_reuse": self.prefix_stats} if self.prefix_reuse else {}),
        }

    def render(self, item: Item) -> str:
        return render_chat(self.tokenizer, item)

    def clock(self) -> str:
        return CLOCK_CUDA if self.device == "cuda" else CLOCK_CPU

    def kv_source(self) -> tuple[Any, int] | None:
        return None if self.model is None else (self.model.config, element_size(self.model.dtype))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_tokens(self, item: Item) -> int:
        """Tokens of the rendered prompt (the batch plan's length), tokenized once per item."""
        if item.id not in self._token_ids:
            self._token_ids[item.id] = self.tokenizer(self.render(item), add_special_tokens=False)["input_ids"]
        return len(self._token_ids[item.id])

    def max_context(self) -> int | None:
        """The most tokens the model attends to (prompt and answer), read from its config
        without loading weights; the tokenizer's model_max_length when the config has none
        (ignoring the huge placeholder tokenizers use for "unset"). None: unknown."""
        if self._max_context is not False:
            return self._max_context
        value: int | None = None
        try:
            cfg = self.model.config if self.model is not None else read_model_config(self.source)
            text = cfg.get_text_config(decoder=True) if hasattr(cfg, "get_text_config") else cfg
            for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
                got = getattr(text, name, None)
                if isinstance(got, int) and 0 < got <= MAX_PLAUSIBLE_CONTEXT:
                    value = got
                    break
        except Exception:  # noqa: BLE001 - a config that cannot be read leaves the context unknown
            value = None
        if value is None:
            got = getattr(self.tokenizer, "model_max_length", None)
            value = got if isinstance(got, int) and 0 < got <= MAX_PLAUSIBLE_CONTEXT else None
        self._max_context = value
        return value

    def _ensure_loaded(self, request: RunRequest | None = None) -> None:
        if self.model is not None:
            return
        import copy

        self.model, self.tokenizer, self.load_seconds = load_model(self.source, self.device, self.dtype)
        if self.batch_auto:  # sized for the run's items and answers
            request = request or RunRequest([])
            self.batch_size = min([auto_batch_size(self.model, self.device, request.every,
                                                   request.generation.max_new_tokens), *self.limits])
        for accel, caps in zip(self.accelerations, self.capabilities):
            if caps.modifies_weights:
                # the loaded model is shared by every run in this process: change a copy
                self.model = accel.prepare_model(copy.deepcopy(self.model))

    def _generate_batch(self, items: list[Item], request: RunRequest,
                        shared: SharedPrefix | None = None) -> list[Generation]:
        import torch

        tok = self.tokenizer
        texts = [self.render(it) for it in items]
        kwargs: dict[str, Any] = {}
        for accel in self.accelerations:
            kwargs.update(accel.generate_kwargs(self.model, len(items)))
        if shared is None:
            enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        else:
            ids = [self._token_ids.get(it.id) or self._tokens_and_split(it)[0] for it in items]
            enc = shared.inputs(ids, tok.pad_token_id, self.device)
            kwargs[cache_kwarg()] = shared.cache_for(len(items))
        g = request.generation
        if g.sampling:
            torch.manual_seed(g.seed)
        override = items[0].generation  # batches() never mixes overrides
        max_new = override.max_new_tokens if override else g.max_new_tokens
        if override and override.ignore_eos:
            kwargs["min_new_tokens"] = max_new  # end-of-sequence is suppressed until the fixed length
        max_new = capture_setup(request, items, enc["input_ids"].shape[1], tok, kwargs, max_new)
        clock = TokenClock(torch.cuda.synchronize if self.device == "cuda" else None)
        started_at, start = time.time(), time.perf_counter()
        with torch.no_grad():  # not inference_mode: quantized tensor subclasses (quanto int4) reject it
            if len(items) == 1 and any(c.context_prefill for c in self.capabilities):
                self._prefill_context(items[0], texts[0], enc, kwargs.get(cache_kwarg()))
            out = self.model.generate(**enc, max_new_tokens=max_new, do_sample=g.sampling,
                                      temperature=g.temperature if g.sampling else None,
                                      top_p=g.top_p if g.sampling else None, top_k=None,
                                      pad_token_id=tok.pad_token_id, streamer=clock, **kwargs)
        if self.device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        first = clock.first_token_at()
        # the document's prefill, shared in equal parts by all its questions, counts as theirs
        lead = shared.seconds * len(items) / max(shared.questions, 1) if shared is not None else 0.0
        seconds += lead
        for accel in self.accelerations:
            accel.observe(self.model, out)
        logits, out = getattr(out, "logits", None), getattr(out, "sequences", out)
        prompt_len = enc["input_ids"].shape[1]
        cached = len(shared.ids) if shared is not None else 0
        self.padding.add(len(items), prompt_len, int(enc["attention_mask"].sum()), cached)
        stop_ids = {tok.eos_token_id, tok.pad_token_id} - {None}
        results = []
        for i, item in enumerate(items):
            new = out[i, prompt_len:].tolist()
            ignore = bool(override and override.ignore_eos)
            n_new = len(new) if ignore else next((k + 1 for k, t in enumerate(new) if t in stop_ids), len(new))
            last = clock.token_at(n_new)
            # finish_reason: a stop token ended it, or it ran to max_new_tokens (ignore_eos: always)
            results.append(Generation(
                item_id=item.id, pack=item.pack, prompt_hash=item.prompt_hash,
                output=tok.decode(new[:n_new], skip_special_tokens=True), output_ids=new[:n_new],
                prompt_tokens=int(enc["attention_mask"][i].sum()), new_tokens=n_new, seconds=round(seconds, 4),
                batch_size=len(items), prefill_seconds=round(first - start + lead, 6) if first is not None else None,
                decode_seconds=round(last - first, 6) if first is not None and last is not None else None,
                started_at=round(started_at, 6), itl_seconds=clock.gaps(n_new) if first is not None else None,
                finish_reason="stop" if n_new and new[n_new - 1] in stop_ids and not ignore else "length"))
        self.watch_seconds += hand_over(request, items, results, logits)  # never a record of a batch that raised
        return results

    def _generate_or_split(self, batch: list[Item], request: RunRequest,
                           shared: SharedPrefix | None = None) -> list[Generation]:
        """Generate a batch; on out-of-memory halve the batch size and retry both halves; a batch
        that raises otherwise is retried item by item, and an item that still raises is an error."""
        import torch

        try:  # teacher forcing reads the batch in two passes where its methods allow (runners/hf/forced_read.py)
            return (shared is None and forced_one_pass(self, batch, request)) or self._generate_batch(batch, request, shared)
        except torch.OutOfMemoryError as exc:
            if len(batch) == 1:
                return [self._error(batch[0], exc)]
            if self.device == "cuda":
                torch.cuda.empty_cache()
            half = len(batch) // 2
            self.batch_size = min(self.batch_size, len(batch) - half)
            self.oom_halvings += 1
            return self._generate_or_split(batch[:half], request, shared) + self._generate_or_split(batch[half:], request,
                                                                                                   shared)
        except Exception as exc:
            if len(batch) == 1:
                return [self._error(batch[0], exc)]
            results: list[Generation] = []
            for item in batch:
                try:
                    results.extend(self._generate_batch([item], request, shared))
                except Exception as item_exc:
                    results.append(self._error(item, item_exc))
            return results

    def _tokens_and_split(self, item: Item) -> tuple[list[int], int | None]:
        """The item's token ids and its context split, from one tokenizer call (kept for generation)."""
        text = self.render(item)
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        self._token_ids[item.id] = enc["input_ids"]
        return enc["input_ids"], split_at_question(text, item, enc["offset_mapping"])

    def _shared_prefixes(self, items: list[Item]) -> tuple[list[tuple[list[int], list[Item]]], list[Item]]:
        """Groups of items asking about the same document, when the run shares prefixes."""
        if not self.prefix_reuse:
            return [], items
        blocking = [a.name for a, c in zip(self.accelerations, self.capabilities) if not c.prefix_reuse]
        if blocking:
            self.prefix_stats["off_because"] = f"{', '.join(blocking)} supplies its own cache"
            return [], items
        return group_by_prefix(items, self._tokens_and_split)

    def context_split(self, text: str, item: Item) -> int | None:
        """Tokens of `text` before the item's question (its `context`), or None when it has none."""
        offsets = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        return split_at_question(text, item, offsets)

    def prefill(self, enc: Any, upto: int, cache: Any) -> None:
        """Run the first `upto` tokens into `cache`; `generate` then continues from there."""
        self.model(input_ids=enc["input_ids"][:, :upto], attention_mask=enc["attention_mask"][:, :upto],
                   use_cache=True, **{cache_kwarg(): cache})

    def _prefill_context(self, item: Item, text: str, enc: Any, cache: Any) -> None:
        split = self.context_split(text, item)
        if split is None or cache is None:
            return  # the method sees the whole prompt at once and records that it did
        self.prefill(enc, split, cache)
        cache.context_prefilled = True

    def _error(self, item: Item, exc: BaseException) -> Generation:
        return Generation(item_id=item.id, pack=item.pack, prompt_hash=item.prompt_hash,
                          error=f"{type(exc).__name__}: {exc}"[:2000], batch_size=1)

    def size(self, request: RunRequest) -> int:
        """Items per batch: the runner's (after any out-of-memory halving), at most the request's."""
        return min(self.batch_size, request.batch_size or self.batch_size)

    def batches(self, items: Iterable[Item], request: RunRequest | None = None) -> list[list[Item]]:
        """Batches planned by prompt tokens, longest first, so padding wastes little (or, with the
        request's `batch_seed`, shuffled ones: other neighbours, other padding); items with different
        generation overrides (fixed output lengths) never share a batch."""
        request = request or RunRequest([])
        self.batch_seed = request.batch_seed
        return plan_batches(items, self.prompt_tokens, self.size(request), request.batch_seed)

    def run(self, request: RunRequest, emit: Callable[[Generation], None]) -> None:
        """Generate every item, handing each result to `emit` as soon as its batch is done."""
        items = request.items
        if not items:
            return
        self._ensure_loaded(request)  # `batch_size: auto` is resolved by the loaded model: the plan needs it
        units = None if self.continuous is not None else self.plan_units(items, request)
        self.begin(request, units[0].batches[0] if units else self.batches(items, request)[0])
        try:
            with frozen_heap():  # no full collection inside a timed step (runners/base.py)
                if units is None:
                    self.continuous.run(self, request, emit)  # pyright: ignore[reportOptionalMemberAccess]
                for unit in units or []:
                    self.generate_unit(unit, emit, request)
        finally:
            self.end()

    def begin(self, request: RunRequest, first_batch: list[Item]) -> None:
        """Load the model and attach the methods (calibrated on every item of the run); a method
        that needs a warm-up (compiling) pays it here on `first_batch`, reported apart."""
        self._ensure_loaded(request)
        texts = [self.render(it) for it in request.every] if self.accelerations else []
        for accel in self.accelerations:
            accel.set_calibration_texts(texts)
            accel.attach(self.model)
        if any(c.warmup for c in self.capabilities):
            start = time.perf_counter()
            with frozen_heap(), contextlib.suppress(Exception):  # the timed batch meets the same error, per item
                self._generate_batch(first_batch, request)
            self.padding = PaddingTally()  # the warm-up's prefill is no part of the run's
            for accel in self.accelerations:
                accel.warmed_up(time.perf_counter() - start)

    def end(self) -> None:
        for accel in self.accelerations:
            accel.detach(self.model)

    def plan_units(self, items: list[Item], request: RunRequest) -> list[WorkUnit]:
        """The run's work: each document's questions after its prefix (prefilled once), then the
        other items in planned batches. The plan depends on the items alone, never on who runs it."""
        groups, rest = self._shared_prefixes(items)
        units = [WorkUnit(self.batches(members, request), prefix) for prefix, members in groups]
        return units + [WorkUnit([batch]) for batch in self.batches(rest, request)]

    def generate_unit(self, unit: WorkUnit, emit: Callable[[Generation], None], request: RunRequest) -> None:
        """Generate one unit, emitting each batch's results as it finishes."""
        if unit.prefix is None:
            for batch in unit.batches:
                # a halving after an out-of-memory error also shrinks the batches still to come
                for start in range(0, len(batch), self.size(request)):
                    for result in self._generate_or_split(batch[start : start + self.size(request)], request):
                        emit(result)
            return
        shared = prefill(self.model, unit.prefix, self.device, cache_kwarg())
        shared.questions = len(unit.items)
        for batch in unit.batches:
            for result in self._generate_or_split(batch, request, shared):
                emit(result)
        self.prefix_stats["documents"] += 1
        self.prefix_stats["questions"] += len(unit.items)
        self.prefix_stats["tokens_saved"] += len(unit.prefix) * (len(unit.items) - 1)
        self.padding.prefix(len(unit.prefix))
