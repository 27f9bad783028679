"""Per-token next-token distributions read off `generate`'s raw logits (docs/drift.md, 'What is stored').

`TokenDists` is what a run generated; `ForcedDists` what a candidate assigns while reading another run's answer. The
logits are the raw ones (before any processor), and the mass outside the top-k is a logsumexp over the other entries,
never 1 - sum, which cancels to 0 in fp32. An answer the candidate wrote token for token as the baseline's is not read
again (`watched`, in `hand_over`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

DEFAULT_TOP_K = 20


@dataclass
class TokenDists:
    """One answer's tokens with their distribution: ids int32 (n,), logprob float32 (n,),
    top_ids int32 (n, k), top_logprobs float32 (n, k), rest_logprob float32 (n,)."""

    ids: np.ndarray
    logprob: np.ndarray
    top_ids: np.ndarray
    top_logprobs: np.ndarray
    rest_logprob: np.ndarray

    @property
    def k(self) -> int:
        return int(self.top_ids.shape[1])

    def __len__(self) -> int:
        return int(self.ids.shape[0])


@dataclass
class ForcedDists:
    """A candidate reading a baseline's answer: at_base_top float32 (n, k), rest_logprob float32 (n,),
    token_logprob float32 (n,), top1_id int32 (n,), top1_logprob float32 (n,)."""

    at_base_top: np.ndarray
    rest_logprob: np.ndarray
    token_logprob: np.ndarray
    top1_id: np.ndarray
    top1_logprob: np.ndarray

    def __len__(self) -> int:
        return int(self.token_logprob.shape[0])


def _rest(lp: Any, ids: Any) -> Any:
    """log of the probability outside `ids` (per row), exact: the other entries' logsumexp."""
    import torch

    return lp.scatter(-1, ids, float("-inf")).logsumexp(-1).to(torch.float32)


def top_k_dists(logits: Sequence[Any], row: int, ids: list[int], k: int) -> TokenDists:
    """Row `row`'s distribution at each of its `len(ids)` generated tokens, from `generate`'s
    per-step raw logits (a tuple of (batch, vocab) tensors)."""
    import torch

    n = len(ids)
    if n == 0:
        return TokenDists(np.zeros(0, np.int32), np.zeros(0, np.float32), np.zeros((0, k), np.int32),
                          np.zeros((0, k), np.float32), np.zeros(0, np.float32))
    lp = torch.stack([logits[t][row] for t in range(n)]).to(torch.float32).log_softmax(-1)
    k = min(k, lp.shape[-1])
    top_lp, top_ids = lp.topk(k, dim=-1)
    tok = torch.tensor(ids, device=lp.device).unsqueeze(-1)
    return TokenDists(
        ids=np.asarray(ids, dtype=np.int32), logprob=lp.gather(-1, tok).squeeze(-1).cpu().numpy().astype(np.float32),
        top_ids=top_ids.cpu().numpy().astype(np.int32), top_logprobs=top_lp.cpu().numpy().astype(np.float32),
        rest_logprob=_rest(lp, top_ids).cpu().numpy(),
    )


def forced_dists(logits: Sequence[Any], row: int, base: TokenDists) -> ForcedDists:
    """Row `row`'s distribution while it read `base`'s tokens, at the places `base` needs."""
    import torch

    n = min(len(base), len(logits))  # shorter only when generate stopped early: the record says so by its length
    lp = torch.stack([logits[t][row] for t in range(n)]).to(torch.float32).log_softmax(-1) if n else None
    if lp is None:
        z = np.zeros(0, np.float32)
        return ForcedDists(np.zeros((0, base.k), np.float32), z, z.copy(), np.zeros(0, np.int32), z.copy())
    top = torch.as_tensor(base.top_ids[:n].astype(np.int64), device=lp.device)
    tok = torch.as_tensor(base.ids[:n].astype(np.int64), device=lp.device).unsqueeze(-1)
    best_lp, best = lp.max(-1)
    return ForcedDists(
        at_base_top=lp.gather(-1, top).cpu().numpy().astype(np.float32), rest_logprob=_rest(lp, top).cpu().numpy(),
        token_logprob=lp.gather(-1, tok).squeeze(-1).cpu().numpy().astype(np.float32),
        top1_id=best.cpu().numpy().astype(np.int32), top1_logprob=best_lp.cpu().numpy().astype(np.float32),
    )


def force_processor(rows: list[list[int]], prompt_len: int, end_id: int) -> Any:
    """A logits processor that makes `generate` emit row r's tokens `rows[r]` (then `end_id`),
    whatever the model prefers: teacher forcing through the decode path, so a quantized cache, an
    eviction policy or a draft model act on the answer as they would while generating. Only the
    choice is forced: `output_logits` still holds the model's own logits."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    class ForceTokens(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            step = int(input_ids.shape[-1]) - prompt_len
            forced = torch.full_like(scores, float("-inf"))
            for r, row in enumerate(rows):
                forced[r, row[step] if step < len(row) else end_id] = 0.0
            return forced

    return LogitsProcessorList([ForceTokens()])


def capture_setup(request: Any, items: Sequence[Any], prompt_len: int, tok: Any, kwargs: dict[str, Any],
                  max_new: int) -> int:
    """Add to `kwargs` the `generate` arguments that keep the raw logits per step (the outputs are the
    same with or without them) and, in teacher forcing (the RunRequest's `forced`), make each row emit its
    forced tokens; returns the answer length to generate."""
    forced = [request.forced[it.id] for it in items] if request.forced is not None else None
    watched = request.on_forced is not None and any(it.id in (request.watched or {}) for it in items)
    if forced is None and not (request.top_k > 0 and request.on_distribution is not None) and not watched:
        return max_new
    kwargs.update(output_logits=True, return_dict_in_generate=True)
    if forced is None:
        return max_new
    end = tok.eos_token_id if tok.eos_token_id is not None else tok.pad_token_id
    kwargs["logits_processor"] = force_processor([f.ids.tolist() for f in forced], prompt_len, end)
    return max([len(f) for f in forced] + [1])


def hand_over(request: Any, items: Sequence[Any], results: Sequence[Any], logits: Any) -> float:
    """Each item's record to the request's `on_forced` (teacher forcing) or `on_distribution`; and, while
    generating with `watched` baseline records, the forced record of each answer that came out
    token for token as the baseline's (its logits are the ones forcing would read: same prefix).
    Returns the seconds those `watched` records took (teacher forcing's cost, not generation's)."""
    spent = 0.0
    if logits is None:
        return spent
    for i, (item, gen) in enumerate(zip(items, results)):
        if request.forced is not None and request.on_forced is not None:
            request.on_forced(item.id, forced_dists(logits, i, request.forced[item.id]))
            continue
        if request.forced is None and request.on_distribution is not None:
            request.on_distribution(item.id, top_k_dists(logits, i, list(gen.output_ids or []), request.top_k))
        base = (request.watched or {}).get(item.id)
        if base is not None and request.on_forced is not None and gen.error is None \
                and list(gen.output_ids or []) == base.ids.tolist():
            start = time.perf_counter()
            record = forced_dists(logits, i, base)
            spent += time.perf_counter() - start
            request.on_forced(item.id, record)
    return spent
