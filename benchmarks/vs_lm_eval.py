"""Benchmark: evalrun's hf runner against lm-eval's hf backend, generation only, side by side.

The demo's items (configs/baseline.yaml), rendered exactly as evalrun renders
them (the chat template), go greedily through lm-eval's
`HFLM(pretrained=<the converted model dir>, batch_size=4).generate_until` and
through evalrun's `HFRunner.run` with three batch plans: the old one
(characters, shortest first), plain chunks of the token order (longest first:
lm-eval's own batches) and the runner's plan (src/evalrun/runners/batch_plan.py: tokens,
longest first, least padding); and two ways lm-eval has no counterpart for: the
runner's plan with `prefix_reuse` (each document prefilled once for its
questions) and continuous batching over a paged cache at the static runner's KV
memory (configs/paged-cb.yaml). fp32 on the CPU, `max_new_tokens` and the batch
size from the config. The arms alternate in one process (A B C D, then D C B A)
so machine noise hits all alike; printed: items/s per round, the medians, the
median of the per-round ratios to lm-eval, the prefill tokens each plan padded
to, and whether prompts, output token ids and output texts are identical.
Goals: the runner's plan >= 1.0x lm-eval on generation alone; >= 1.5x with prefix
reuse or continuous batching.

lm-eval is not a dependency of evalrun. Without it, only the evalrun arms run.
To measure against it without touching the project's environment:

    python3 -m venv /tmp/lmeval-venv
    echo "$PWD/.venv/lib/python3.11/site-packages" > /tmp/lmeval-venv/lib/python3.11/site-packages/zz_deps.pth
    /tmp/lmeval-venv/bin/pip install "lm-eval==0.4.*"     # check with --dry-run: no other torch/transformers
    /tmp/lmeval-venv/bin/pip install --no-deps -e .
    /tmp/lmeval-venv/bin/python benchmarks/vs_lm_eval.py [--rounds 6] [--config configs/baseline.yaml]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.contract.types import Generation, Item  # noqa: E402
from evalrun.evals.config import load_config_variant  # noqa: E402
from evalrun.evals.run import prepare  # noqa: E402
from evalrun.runners.base import RunRequest  # noqa: E402
from evalrun.runners.batch_plan import PaddingTally  # noqa: E402
from evalrun.runners.hf import BatchingSettings, ContinuousRun  # noqa: E402
from evalrun.runners.models import local_dir  # noqa: E402

LM_EVAL = "lm-eval hf"


@dataclass
class Arm:
    """One way of generating the items, and what its rounds measured."""

    name: str
    rate: list[float] = field(default_factory=list)  # items/s per round
    padded: int = 0  # prefill tokens its batches padded to (rows x longest prompt)
    ids: dict[str, list[int]] = field(default_factory=dict)  # item id -> output token ids
    text: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, list[int]] = field(default_factory=dict)  # item id -> prompt token ids (lm-eval's)


def chars_plan(items: list[Item], size: int) -> list[list[Item]]:
    """The plan before src/evalrun/runners/batch_plan.py: prompt characters, shortest first."""
    ordered = sorted(items, key=lambda it: (len(it.prompt), it.id))
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]


def token_chunks(items: list[Item], size: int, tokens: Callable[[Item], int]) -> list[list[Item]]:
    """lm-eval's batches: tokens, longest first, cut every `size` items."""
    ordered = sorted(items, key=lambda it: (-tokens(it), it.id))
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]


def _trim(new: list[int], stop: set[int]) -> list[int]:
    """Output ids up to and including the first stop token (as the runner stores them)."""
    end = next((k + 1 for k, t in enumerate(new) if t in stop), len(new))
    return new[:end]


@dataclass
class Way:
    """How an evalrun arm generates: a batch plan (None: the runner's own) and runner settings
    set for its rounds only (prefix reuse, the continuous-batching mode)."""

    plan: list[list[Item]] | None = None
    settings: dict[str, Any] = field(default_factory=dict)


def run_evalrun(runner: Any, request: RunRequest, way: Way, arm: Arm) -> None:
    """One round of `runner.run` over the request's items, the way `way` says."""
    items = request.items
    runner.padding = PaddingTally()
    if way.plan is not None:
        runner.batches = lambda _items, _request=None, plan=way.plan: plan
    saved = {k: getattr(runner, k) for k in way.settings}
    for k, v in way.settings.items():
        setattr(runner, k, v)
    out: list[Generation] = []
    try:
        start = time.perf_counter()
        runner.run(request, out.append)
        arm.rate.append(len(items) / (time.perf_counter() - start))
    finally:
        runner.__dict__.pop("batches", None)
        for k, v in saved.items():
            setattr(runner, k, v)
    arm.padded = runner.padding.padded_prefill_tokens
    arm.ids = {g.item_id: list(g.output_ids or []) for g in out}
    arm.text = {g.item_id: g.output or "" for g in out}


def load_lm_eval(model_dir: str, batch_size: int) -> Any:
    """lm-eval's hf backend on the same converted model, fp32 on the CPU; None without lm_eval."""
    try:
        from lm_eval.models.huggingface import HFLM
    except ImportError:
        return None
    return HFLM(pretrained=model_dir, batch_size=batch_size, device="cpu", dtype="float32")


def run_lm_eval(lm: Any, runner: Any, items: list[Item], max_new: int, arm: Arm) -> None:
    """One round of `generate_until` over the rendered prompts; the batches it generated are
    read back from its `_model_generate` calls (prompt ids, padded width, output ids)."""
    import torch
    from lm_eval.api.instance import Instance

    kwargs = {"until": [], "max_gen_toks": max_new, "do_sample": False, "temperature": 0.0}
    requests = [Instance("generate_until", {}, (runner.render(it), dict(kwargs)), i) for i, it in enumerate(items)]
    calls: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    real = lm._model_generate

    def spy(context, max_length, stop, **kw):  # type: ignore[no-untyped-def]
        out = real(context, max_length, stop, **kw)
        calls.append((context, kw["attention_mask"], out))
        return out

    lm._model_generate = spy
    try:
        start = time.perf_counter()
        texts = lm.generate_until(requests, disable_tqdm=True)
        arm.rate.append(len(items) / (time.perf_counter() - start))
    finally:
        del lm._model_generate
    by_prompt = {tuple(runner._token_ids[it.id]): it.id for it in items}  # filled by prompt_tokens
    tok = runner.tokenizer
    stop = {tok.eos_token_id, tok.pad_token_id} - {None}
    arm.padded = sum(int(ctx.shape[0] * ctx.shape[1]) for ctx, _m, _o in calls)
    for ctx, mask, out in calls:
        for row in range(ctx.shape[0]):
            prompt = ctx[row][mask[row].bool()].tolist()
            item_id = by_prompt.get(tuple(prompt), f"<unmatched prompt {len(arm.prompts)}>")
            arm.prompts[item_id] = prompt
            arm.ids[item_id] = _trim(out[row, ctx.shape[1]:].tolist(), stop)
    arm.text = {it.id: text for it, text in zip(items, texts)}


def _same(a: dict[str, Any], b: dict[str, Any], items: list[Item]) -> int:
    return sum(1 for it in items if it.id in a and a.get(it.id) == b.get(it.id))


def report(arms: list[Arm], items: list[Item], prompt_tokens: int, reference: Arm) -> None:
    """Medians, per-round ratios to the reference arm, padding, and output identity."""
    n = len(items)
    print(f"\nprompt tokens {prompt_tokens}; median items/s, median of per-round ratios to {reference.name}, "
          "prefill tokens padded to, outputs identical to the reference:")
    for arm in arms:
        ratios = [a / b for a, b in zip(arm.rate, reference.rate)]
        same_ids = _same(arm.ids, reference.ids, items)
        same_text = _same(arm.text, reference.text, items)
        print(f"  {arm.name:<46} {statistics.median(arm.rate):6.3f} items/s  {statistics.median(ratios):5.3f}x "
              f"(rounds {min(ratios):.3f}-{max(ratios):.3f})  padded {arm.padded:6d} "
              f"(+{arm.padded / prompt_tokens - 1:.1%})  ids {same_ids}/{n}  text {same_text}/{n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/baseline.yaml")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()

    cfg = load_config_variant(args.config, {"device": "cpu", "dtype": "float32"}, "vs-lm-eval")
    prepared = prepare(cfg, tempfile.mkdtemp(prefix="evalrun-vs-lm-eval-"), limit=args.limit)
    runner, items = prepared.runner, prepared.items
    size, max_new = runner.batch_size, int(cfg.generation.max_new_tokens)
    prompt_tokens = sum(runner.prompt_tokens(it) for it in items)
    paged = ContinuousRun(BatchingSettings(mode="continuous", block_size=32), size)  # configs/paged-cb.yaml: the static runner's KV memory
    plans = {"evalrun, old plan (characters, shortest first)": Way(chars_plan(items, size)),
             "evalrun, tokens longest first, plain chunks": Way(token_chunks(items, size, runner.prompt_tokens)),
             "evalrun, runner's plan (tokens, least padding)": Way(),
             "evalrun, runner's plan + prefix_reuse": Way(settings={"prefix_reuse": True}),
             "evalrun, continuous batching (paged)": Way(settings={"continuous": paged})}
    lm = load_lm_eval(str(local_dir(prepared.source)), size)
    arms = ([Arm(LM_EVAL)] if lm is not None else []) + [Arm(name) for name in plans]
    print(f"{len(items)} items from {args.config}, batch {size}, {max_new} new tokens, greedy, fp32 on the CPU, "
          f"{args.rounds} rounds alternating; model {local_dir(prepared.source)}")
    if lm is None:
        print("lm_eval is not importable: only evalrun's plans are compared (see this file's docstring)")
    for way in plans.values():  # loads the model, first-call costs of each setting (a plan is all the items)
        if way.plan is None:
            run_evalrun(runner, prepared.request(items[:size]), way, Arm("warm-up"))  # loads the model, first-call costs
    if lm is not None:
        run_lm_eval(lm, runner, items[:size], max_new, Arm("warm-up"))
    for r in range(args.rounds):
        for arm in (arms if r % 2 == 0 else arms[::-1]):
            if arm.name == LM_EVAL:
                run_lm_eval(lm, runner, items, max_new, arm)
            else:
                run_evalrun(runner, prepared.request(items), plans[arm.name], arm)
        print(f"round {r + 1}: " + ", ".join(f"{a.name.split(',')[-1].strip()} {a.rate[-1]:.3f}" for a in arms),
              flush=True)
        report(arms, items, prompt_tokens, arms[0])  # so far: an interrupted run still says something
    if lm is not None:
        prompts_same = sum(1 for it in items if arms[0].prompts.get(it.id) == runner._token_ids[it.id])
        print(f"  prompt token ids identical to evalrun's: {prompts_same}/{len(items)}")


if __name__ == "__main__":
    main()
