"""The `hf` runner: transformers in process, on the local GPU or CPU.

Items are sorted by length and generated in left-padded batches. A batch that
raises is retried item by item, and an item that still raises becomes an
`error` generation: a candidate that crashes on some inputs is a finding, not
a harness failure.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from evals.types import Generation, GenerationOverride, Item
from runners.accel import Acceleration
from runners.models import ModelSource, load_model, load_tokenizer
from runners.token_clock import TokenClock


class HFRunner:
    """Generates answers for Items with one loaded model and a set of accelerations."""

    def __init__(
        self,
        source: ModelSource,
        device: str,
        dtype: str,
        generation: dict[str, Any],
        accelerations: list[Acceleration],
        batch_size: int = 4,
    ):
        self.source = source
        self.device = device
        self.dtype = dtype
        self.generation = generation
        self.accelerations = accelerations
        limits = [a.max_batch_size for a in accelerations if a.max_batch_size]
        self.batch_size = min([batch_size, *limits])
        self.model: Any = None
        # every item of the run (not only those still missing), for methods that calibrate on them
        self.run_items: list[Item] | None = None
        self.tokenizer: Any = load_tokenizer(source)
        self.load_seconds = 0.0

    def render(self, item: Item) -> str:
        """The exact text fed to the model: the chat template when the tokenizer has one."""
        if getattr(self.tokenizer, "chat_template", None):
            messages = ([{"role": "system", "content": item.system}] if item.system else []) + [
                {"role": "user", "content": item.prompt}
            ]
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return f"{item.system}\n\n{item.prompt}" if item.system else item.prompt

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _ensure_loaded(self) -> None:
        if self.model is not None:
            return
        import copy

        self.model, self.tokenizer, self.load_seconds = load_model(self.source, self.device, self.dtype)
        for accel in self.accelerations:
            if accel.modifies_weights:
                # the loaded model is shared by every run in this process: change a copy
                self.model = accel.prepare_model(copy.deepcopy(self.model))

    def _generate_batch(self, items: list[Item]) -> list[Generation]:
        import torch

        tok = self.tokenizer
        texts = [self.render(it) for it in items]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        kwargs: dict[str, Any] = {}
        for accel in self.accelerations:
            kwargs.update(accel.generate_kwargs(self.model, len(items)))
        g = self.generation
        sampling = g.get("temperature", 0.0) > 0
        if sampling:
            torch.manual_seed(int(g.get("seed", 0)))
        override = items[0].generation  # batches() never mixes overrides
        max_new = override.max_new_tokens if override else int(g.get("max_new_tokens", 48))
        if override and override.ignore_eos:
            kwargs["min_new_tokens"] = max_new  # end-of-sequence is suppressed until the fixed length
        clock = TokenClock(torch.cuda.synchronize if self.device == "cuda" else None)
        start = time.perf_counter()
        with torch.no_grad():  # not inference_mode: quantized tensor subclasses (quanto int4) reject it
            out = self.model.generate(
                **enc,
                max_new_tokens=max_new,
                do_sample=sampling,
                temperature=g.get("temperature") if sampling else None,
                top_p=g.get("top_p") if sampling else None,
                top_k=None,
                pad_token_id=tok.pad_token_id,
                streamer=clock,
                **kwargs,
            )
        if self.device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        first = clock.first_token_at()
        for accel in self.accelerations:
            accel.observe(self.model, out)
        prompt_len = enc["input_ids"].shape[1]
        stop_ids = {tok.eos_token_id, tok.pad_token_id} - {None}
        results = []
        for i, item in enumerate(items):
            new = out[i, prompt_len:].tolist()
            if override and override.ignore_eos:
                n_new = len(new)
            else:
                n_new = next((k + 1 for k, t in enumerate(new) if t in stop_ids), len(new))
            last = clock.token_at(n_new)
            results.append(
                Generation(
                    item_id=item.id,
                    pack=item.pack,
                    prompt_hash=item.prompt_hash,
                    output=tok.decode(new[:n_new], skip_special_tokens=True),
                    output_ids=new[:n_new],
                    prompt_tokens=int(enc["attention_mask"][i].sum()),
                    new_tokens=n_new,
                    seconds=round(seconds, 4),
                    batch_size=len(items),
                    prefill_seconds=round(first - start, 6) if first is not None else None,
                    decode_seconds=round(last - first, 6) if first is not None and last is not None else None,
                )
            )
        return results

    def _error(self, item: Item, exc: BaseException) -> Generation:
        return Generation(
            item_id=item.id,
            pack=item.pack,
            prompt_hash=item.prompt_hash,
            error=f"{type(exc).__name__}: {exc}"[:2000],
            batch_size=1,
        )

    def batches(self, items: Iterable[Item]) -> list[list[Item]]:
        """Length-sorted batches, so padding wastes little; items with different
        generation overrides (fixed output lengths) never share a batch."""
        groups: dict[GenerationOverride | None, list[Item]] = {}
        for it in sorted(items, key=lambda it: (len(it.prompt), it.id)):
            groups.setdefault(it.generation, []).append(it)
        return [g[i : i + self.batch_size] for g in groups.values() for i in range(0, len(g), self.batch_size)]

    def run(self, items: list[Item], emit: Callable[[Generation], None]) -> None:
        """Generate every item, handing each result to `emit` as soon as its batch is done."""
        if not items:
            return
        self._ensure_loaded()
        for accel in self.accelerations:
            if hasattr(accel, "set_calibration_texts"):
                accel.set_calibration_texts([self.render(it) for it in (self.run_items or items)])
            accel.attach(self.model)
        try:
            for batch in self.batches(items):
                try:
                    results = self._generate_batch(batch)
                except Exception as exc:  # a batch that raises is retried one by one
                    if len(batch) == 1:
                        results = [self._error(batch[0], exc)]
                    else:
                        results = []
                        for item in batch:
                            try:
                                results.extend(self._generate_batch([item]))
                            except Exception as item_exc:
                                results.append(self._error(item, item_exc))
                for result in results:
                    emit(result)
        finally:
            for accel in self.accelerations:
                accel.detach(self.model)
