"""Teacher forcing in two forward passes per batch instead of one per answer token.

Where a method acts on a chunk of answer tokens exactly as on one at a time (`Acceleration.forced_in_one_pass`,
docs/drift.md), the same logits as `generate`'s decode steps come from: 1. the prompt's prefill through the
method's own cache, whose last logits give the answer's first token; 2. one forward of every row's answer
tokens but the last, right-padded (causal attention keeps padding out). A test holds it to the decode path
(KL under 1e-5 in fp32).
"""

from __future__ import annotations

from typing import Any, Sequence

from evalrun.contract.types import Generation, Item
from evalrun.runners.accel.base import cache_kwarg
from evalrun.runners.base import RunRequest
from evalrun.runners.logprobs import TokenDists, hand_over


def one_pass_blocker(accelerations: Sequence[Any], capabilities: Sequence[Any], answer_tokens: int) -> str | None:
    """Why this batch must be read through the decode path (None: the two-pass read gives its logits)."""
    for accel, caps in zip(accelerations, capabilities):
        if caps.context_prefill:
            return f"{accel.name} prefills the context before the question"
        why = accel.forced_in_one_pass(answer_tokens)
        if why is not None:
            return why
    return None


def read_forced(model: Any, enc: Any, kwargs: dict[str, Any], rows: Sequence[TokenDists], pad_id: int,
                cache_name: str) -> list[Any]:
    """Per answer step t, the (batch, vocab) logits of step t (the `output_logits` layout of `generate`)."""
    import torch
    from transformers import DynamicCache

    mask = enc["attention_mask"]
    cache = kwargs.get(cache_name)
    if cache is None:
        cache = DynamicCache()
    prompt_len = int(enc["input_ids"].shape[1])
    positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 1)
    first = model(input_ids=enc["input_ids"], attention_mask=mask, position_ids=positions, past_key_values=cache,
                  use_cache=True, cache_position=torch.arange(prompt_len, device=mask.device), logits_to_keep=1)
    steps = [first.logits[:, -1].float()]
    longest = max(len(r) for r in rows)
    if longest <= 1:
        return steps
    n = longest - 1
    ids = torch.full((len(rows), n), pad_id, dtype=enc["input_ids"].dtype, device=mask.device)
    for i, r in enumerate(rows):
        m = min(len(r) - 1, n)
        if m > 0:
            ids[i, :m] = torch.as_tensor(r.ids[:m].astype("int64"), device=mask.device)
    full = torch.cat([mask, torch.ones((len(rows), n), dtype=mask.dtype, device=mask.device)], dim=-1)
    start = mask.long().sum(-1, keepdim=True)
    chunk = model(input_ids=ids, attention_mask=full, position_ids=start + torch.arange(n, device=mask.device),
                  past_key_values=cache, use_cache=True,
                  cache_position=torch.arange(prompt_len, prompt_len + n, device=mask.device))
    logits = chunk.logits.float()
    steps += [logits[:, t] for t in range(n)]
    return steps


def forced_one_pass(runner: Any, items: list[Item], request: RunRequest) -> list[Generation] | None:
    """In teacher forcing (`request.forced`, `runner.one_pass_forcing`) where every method allows it: the
    batch (an hf runner's, without a shared prefix) encoded as `generate` gets it, read in two passes, its
    records handed over, and placeholder Generations (the caller discards them: the forced answers are the
    baseline's); None: read it through `generate`."""
    import torch

    if request.forced is None or not runner.one_pass_forcing:
        return None
    rows = [request.forced[it.id] for it in items]
    if one_pass_blocker(runner.accelerations, runner.capabilities, max(len(r) for r in rows)) is not None:
        return None
    texts = [runner.render(it) for it in items]
    enc = runner.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(runner.device)
    kwargs: dict[str, Any] = {}
    for accel in runner.accelerations:
        kwargs.update(accel.generate_kwargs(runner.model, len(items)))
    with torch.no_grad():
        steps = read_forced(runner.model, enc, kwargs, rows, runner.tokenizer.pad_token_id, cache_kwarg())
    results = [Generation(item_id=it.id, pack=it.pack, prompt_hash=it.prompt_hash, output="",
                          output_ids=r.ids.tolist(), new_tokens=len(r)) for it, r in zip(items, rows)]
    hand_over(request, items, results, steps)
    return results


__all__ = ["forced_one_pass", "one_pass_blocker", "read_forced"]
