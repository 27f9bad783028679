"""Teacher forcing through a served engine: the candidate's server reads the baseline's answer tokens.

One `max_tokens: 1` completion per item, prompt ids then the baseline's answer ids, with `prompt_logprobs: k`:
a prefill, not the engine's decode steps (docs/drift.md, 'Served engines'). A baseline top-k id the candidate
did not return is `complete`d with the value in its possible range that makes the coarsened KL smallest, so
the estimator stays a lower bound on the full KL.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any, Callable

import numpy as np

from evalrun.contract.types import Item
from evalrun.runners.base import RunRequest
from evalrun.runners.logprobs import ForcedDists, TokenDists
from evalrun.runners.openai._http import ItemFailed, ServerError, Transient
from evalrun.runners.openai._logprobs import MAX_TOP, NotLogprob, checked

NO_PROMPT_LOGPROBS = "the engine returns no prompt logprobs"
# the returned logprobs are fp32: their sum is known to about k x 6e-8; the mass the server did not
# return is taken as at least this, so rounding never makes a candidate probability exactly 0
MASS_TOLERANCE = 1e-6
_STREAMED = ("stream", "stream_options", "logprobs", "top_logprobs")


def body(model: str, prompt_ids: list[int], answer_ids: list[int], k: int) -> dict[str, Any]:
    """The completion request that reads `answer_ids` after the prompt (one token generated, discarded)."""
    return {"model": model, "prompt": [*prompt_ids, *answer_ids], "max_tokens": 1, "temperature": 0.0,
            "prompt_logprobs": k, "stream": False}


def _lambda(b: np.ndarray, cap: float, target: float) -> float:
    """The λ at which sum(min(cap, b / λ)) == target (bisection in log space; b > 0, target < len(b) * cap)."""
    lo, hi = -700.0, 700.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.minimum(cap, b / math.exp(mid)).sum() > target:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def complete(b: np.ndarray, r_b: float, c_mass: float, unreturned: float, cap: float) -> np.ndarray:
    """The candidate's probabilities u at baseline top-k ids it did not return (baseline probabilities
    `b`), minimising  sum b log(b / u) + r_b log(r_b / (c_mass - sum u))  subject to 0 <= u <= cap and
    sum u <= unreturned; `c_mass`: the candidate's mass outside the baseline ids it did return.

    Convex, so the KKT point is the minimum: u = min(cap, b / λ), with λ (c_mass - sum u) = r_b
    where the mass bound leaves room, else the λ at which sum u = unreturned."""
    b = np.maximum(b, 1e-300)
    if len(b) * cap <= unreturned:
        floor_lam = 0.0  # every u at its cap fits within the unreturned mass
    else:
        floor_lam = _lambda(b, cap, unreturned)

    def excess(lam: float) -> float:
        return lam * (c_mass - float(np.minimum(cap, b / lam).sum())) - r_b if lam > 0 else -r_b

    if excess(floor_lam) >= 0:
        lam = floor_lam
    else:  # increasing in λ above floor_lam (there sum u <= unreturned <= c_mass): bisect for its root
        lo, hi = math.log(max(floor_lam, 1e-300)), 700.0
        for _ in range(200):
            mid = (lo + hi) / 2
            if excess(math.exp(mid)) < 0:
                lo = mid
            else:
                hi = mid
        lam = math.exp(hi)
    return np.minimum(cap, b / lam) if lam > 0 else np.full(len(b), cap)


def _entry(raw: Any) -> dict[int, tuple[float, int | None]] | None:
    """One position's {token id: (logprob, rank)} from vLLM's JSON (keys are the ids as strings)."""
    if not isinstance(raw, dict):
        return None
    out: dict[int, tuple[float, int | None]] = {}
    for key, value in raw.items():
        if not (isinstance(key, str) and key.lstrip("-").isdigit() and isinstance(value, dict)):
            return None
        lp, rank = value.get("logprob"), value.get("rank")
        if not isinstance(lp, (int, float)):
            return None
        out[int(key)] = (float(lp), rank if isinstance(rank, int) else None)
    return out


def _position(entry: dict[int, tuple[float, int | None]], base_ids: np.ndarray, base_lp: np.ndarray,
              r_b: float, token: int, k: int) -> tuple[np.ndarray, float, float, int, float]:
    """One answer token: (logprobs at the baseline's top ids, rest logprob, the token's, top-1 id and logprob)."""
    ranked = [(i, lp) for i, (lp, rank) in entry.items() if rank is not None and rank <= k] or \
        [(i, lp) for i, (lp, _) in entry.items()]
    top_id, top_lp = max(ranked, key=lambda e: e[1])
    cap = math.exp(min(lp for _, lp in ranked)) if len(ranked) >= k else 0.0
    returned = float(np.exp(np.asarray([lp for lp, _ in entry.values()], np.float64)).sum())
    unreturned = max(1.0 - returned, MASS_TOLERANCE)
    at = np.full(len(base_ids), -math.inf)
    known = np.asarray([int(i) in entry for i in base_ids])
    at[known] = [entry[int(i)][0] for i in base_ids[known]]
    c_mass = max(1.0 - float(np.exp(at[known]).sum()), unreturned)
    if (~known).any():
        u = complete(np.exp(base_lp[~known].astype(np.float64)), r_b, c_mass, unreturned, max(cap, 1e-300))
        at[~known] = np.log(np.maximum(u, 1e-300))
        c_mass = c_mass - float(u.sum())
    return at, math.log(max(c_mass, 1e-300)), entry[token][0], top_id, top_lp


def record(prompt_logprobs: Any, prompt_len: int, base: TokenDists, k: int) -> tuple[ForcedDists | None, str | None]:
    """The candidate's record from a response's `prompt_logprobs` (one entry per prompt position, the
    first None), or None and why: the positions of the answer are P .. P + n - 1. A value there that
    is not a log-probability raises NotLogprob: the server's figures cannot be trusted at all."""
    if not isinstance(prompt_logprobs, list):
        return None, NO_PROMPT_LOGPROBS
    n = len(base)
    if len(prompt_logprobs) != prompt_len + n:
        return None, f"prompt_logprobs has {len(prompt_logprobs)} positions, not the {prompt_len} + {n} sent"
    at, rest, own, top1, top1_lp = [], [], [], [], []
    for t in range(n):
        entry = _entry(prompt_logprobs[prompt_len + t])
        token = int(base.ids[t])
        if entry is None or token not in entry:
            return None, f"answer token {t} (id {token}) has no logprob of its own in prompt_logprobs"
        entry = {i: (checked(lp, f"answer token {t} (id {token}), prompt_logprobs' id {i}"), rank)
                 for i, (lp, rank) in entry.items()}
        a, r, o, i, lp = _position(entry, base.top_ids[t], base.top_logprobs[t], math.exp(float(base.rest_logprob[t])),
                                   token, k)
        at.append(a)
        rest.append(r)
        own.append(o)
        top1.append(i)
        top1_lp.append(lp)
    shape = (n, base.k)
    return ForcedDists(at_base_top=np.asarray(at, np.float32).reshape(shape), rest_logprob=np.asarray(rest, np.float32),
                       token_logprob=np.asarray(own, np.float32), top1_id=np.asarray(top1, np.int32),
                       top1_logprob=np.asarray(top1_lp, np.float32)), None


async def _json(resp: Any, _start: float) -> dict[str, Any]:
    try:
        data = json.loads(await resp.aread())
    except ValueError:
        raise Transient("malformed answer to a teacher-forced read") from None
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
        raise Transient("malformed answer to a teacher-forced read: no choices")
    return data


class ServedForcing:
    """The runner's side of it: reading a RunRequest's baseline records (`forced`, each result to its
    `on_forced`), and why the reading stopped or skipped an item (`forced_problem`, `forced_skipped`)."""

    def __init__(self) -> None:
        self.forced_problem: str | None = None  # why nothing more could be read (the engine, a refusal)
        self.forced_skipped: list[str] = []  # items read without a record, each with why

    def prompt_ids(self, runner: Any, item: Item) -> list[int]:
        """The rendered prompt's ids as the server tokenizes the request: a completions prompt with the
        special tokens the tokenizer adds, a chat template's text as it is (vLLM's defaults)."""
        special = runner.settings.endpoint == "completions"
        return list(runner.tokenizer(runner.render(item), add_special_tokens=special)["input_ids"])

    async def _check(self, runner: Any, request: RunRequest, client: Any, item: Item, ids: list[int]) -> str | None:
        """Whether the server counts the item's prompt as len(ids) tokens (asked once per run, as it generates)."""
        # the request the item was generated with (extra_body, a chat template's server-side rendering), whole
        ask = {k: v for k, v in runner._body(item, request.generation).items() if k not in _STREAMED} | {
            "max_tokens": 1, "stream": False}
        path = "chat/completions" if runner.settings.endpoint == "chat" else "completions"
        what = f"POST /{path} (item {item.id}, the prompt's token count)"
        data = await runner.http.with_retries(lambda: runner.http.send(client, "POST", path, ask, _json, what), what)
        counted = (data.get("usage") or {}).get("prompt_tokens")
        if isinstance(counted, int) and counted != len(ids):
            return (f"item {item.id}: the server counts {counted} prompt tokens, the local tokenizer {len(ids)}: "
                    "the forced read would not see the prompt the answer was generated after")
        return None

    async def _one(self, runner: Any, request: RunRequest, client: Any, item: Item, base: TokenDists) -> None:
        ids = self.prompt_ids(runner, item)
        what = f"POST /completions (item {item.id}, teacher-forced)"
        k = min(base.k, MAX_TOP)  # what the server returns at most (vLLM's default max_logprobs)
        ask = body(runner.served_model, ids, [int(i) for i in base.ids], k)
        try:
            data = await runner.http.with_retries(
                lambda: runner.http.send(client, "POST", "completions", ask, _json, what), what)
        except ItemFailed as exc:
            self.forced_skipped.append(f"item {item.id}: {exc}")
            return
        try:
            rec, why = record(data["choices"][0].get("prompt_logprobs"), len(ids), base, k)
        except NotLogprob as exc:  # a server that sends such values is not read any further
            self.forced_problem = f"item {item.id}: {exc}"
            return
        if rec is None:
            if why == NO_PROMPT_LOGPROBS:
                self.forced_problem = why
            else:
                self.forced_skipped.append(f"item {item.id}: {why}")
            return
        if request.on_forced is not None:
            request.on_forced(item.id, rec)

    async def read_all(self, runner: Any, request: RunRequest) -> None:
        """Read every item's forced answer (at most the runner's concurrency at once); a refusal or an
        engine without prompt logprobs stops the reading with `forced_problem` set."""
        forced = request.forced or {}
        pending = [it for it in reversed(request.items) if it.id in forced]

        async def worker(client: Any) -> None:
            while pending and self.forced_problem is None:
                item = pending.pop()
                await self._one(runner, request, client, item, forced[item.id])

        self.forced_problem, self.forced_skipped = None, []
        async with runner.http.client() as client:
            workers: list[asyncio.Task[None]] = []
            try:
                if pending:  # the tokenization is the run's: checked on one item, before any is read
                    self.forced_problem = await self._check(runner, request, client, pending[-1],
                                                            self.prompt_ids(runner, pending[-1]))
                workers = [asyncio.create_task(worker(client)) for _ in range(min(runner.settings.concurrency, len(pending)))]
                await asyncio.gather(*workers)
            except ServerError as exc:
                self.forced_problem = f"the server refused a teacher-forced read (token ids with vLLM's prompt_logprobs): {exc}"
            finally:
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
