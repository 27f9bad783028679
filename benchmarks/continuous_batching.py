"""Continuous batching (paged KV cache) against static batches, at the same KV memory.

    python benchmarks/continuous_batching.py [--baseline configs/baseline.yaml] [--candidate configs/paged-cb.yaml]
                                             [--rounds 1] [--limit N]

Both runners are built in one process over one loaded model and time the same
items (the baseline's demo packs: 25 items) in passes alternating A B B A (x
`--rounds`), so a load that changes during the benchmark biases neither side;
each pass runs in a fresh thread, as the continuous side's forward does (see _pass).
A pass hands the runner every item at once, as a run does: the static runner
generates length-sorted batches of `batch_size`, the continuous one keeps its
batch full from the queue. items/s is items over the pass's wall clock; the
figures are medians over passes.

Same memory: the candidate's paged cache (num_blocks: null) is sized to the KV
tokens the static runner's largest batch holds (items x (longest prompt +
max_new_tokens)), rounded up to whole blocks; both figures are printed.

Identical share: items whose output token ids equal the static runner's first
pass (and, as the floor, how often each side repeats itself across passes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals.results import PreparedRun
from evalrun.evals.run import prepare  # noqa: E402
from evalrun.evals.config import load_config  # noqa: E402
from evalrun.runners.accel.kv_layout import KVLayout, element_size  # noqa: E402


def _pass(prepared: PreparedRun, items: list, fresh: bool = True,
          run_items: list | None = None) -> tuple[float, dict]:
    """One timed pass; in a fresh thread unless `fresh` is False. The continuous side's forward runs in
    the manager's new thread, and on a loaded CPU a new thread's OpenMP team was measured up to 4x faster
    than the main thread's (a 512x512 matmul, load 7 on 2 cores): timing both sides from a fresh thread
    keeps that out of the ratio."""
    out: list = []
    took: list[float] = []

    def go() -> None:
        start = time.perf_counter()
        prepared.runner.run(prepared.request(items, run_items=run_items), out.append)
        took.append(time.perf_counter() - start)

    if fresh:
        worker = threading.Thread(target=go)
        worker.start()
        worker.join()
    else:
        go()
    if not took:
        raise RuntimeError("the timed pass failed (see the traceback above)")
    return took[0], {g.item_id: g for g in out}


def _same(a: dict, b: dict) -> int:
    return sum(1 for k, g in a.items() if g.error is None and k in b and b[k].output_ids == g.output_ids)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="configs/baseline.yaml")
    ap.add_argument("--candidate", default="configs/paged-cb.yaml")
    ap.add_argument("--rounds", type=int, default=1, help="A B B A blocks (each side runs 2 passes per block)")
    ap.add_argument("--limit", type=int, default=None, help="items per task, as evalrun --limit")
    ap.add_argument("--main-thread", action="store_true",
                    help="time the static side from the main thread, as `evalrun run` does (see _pass)")
    args = ap.parse_args(argv)

    base = prepare(load_config(args.baseline), "/tmp/cb-bench-runs", limit=args.limit)
    cand = prepare(load_config(args.candidate), "/tmp/cb-bench-runs", limit=args.limit)
    if cand.config.batching.mode != "continuous" or base.config.batching.mode != "static":
        print("the baseline must batch statically and the candidate continuously")
        return 2
    items = base.items
    _pass(base, items[:2], run_items=items)  # warm-up: model load, first-call allocations
    _pass(cand, items[:2], run_items=items)
    print(f"{len(items)} items, torch threads {__import__('torch').get_num_threads()}, static side timed from "
          f"{'the main thread' if args.main_thread else 'a fresh thread'}, "
          f"load average {os.getloadavg()[0]:.2f} at the start")

    speeds: dict[str, list[float]] = {"static": [], "continuous": []}
    outputs: dict[str, list[dict]] = {"static": [], "continuous": []}
    order = [("static", base), ("continuous", cand), ("continuous", cand), ("static", base)] * args.rounds
    for i, (side, prepared) in enumerate(order):
        wall, got = _pass(prepared, items, fresh=not (args.main_thread and side == "static"), run_items=items)
        errors = sum(1 for g in got.values() if g.error is not None)
        speeds[side].append(len(items) / wall)
        outputs[side].append(got)
        print(f"pass {i + 1}: {side:<10} {wall:7.2f} s  {len(items) / wall:.3f} items/s  errors {errors}")

    model = base.runner.model
    batching = cand.runner.manifest_extras()["batching"]
    layout, elem = KVLayout.of(model.config), element_size(model.dtype)
    static_tokens = batching["static_peak_kv_tokens"]
    s_med, c_med = statistics.median(speeds["static"]), statistics.median(speeds["continuous"])
    ref = outputs["static"][0]
    same = _same(outputs["continuous"][0], ref)
    print()
    print(f"memory: static largest batch {static_tokens} KV tokens = {layout.bytes(static_tokens, elem) / 2**20:.1f} MiB; "
          f"paged cache {batching['num_blocks']} blocks x {batching['block_size']} = {batching['kv_tokens']} tokens "
          f"= {batching['kv_bytes'] / 2**20:.1f} MiB (tensor {batching['cache_tensor_bytes'] / 2**20:.1f} MiB "
          "with 2 trash sectors)")
    print(f"continuous: max {batching['max_in_flight']} requests in flight, {batching['steps']} steps, "
          f"{batching['tokens_per_step']['mean']} tokens/step (max {batching['tokens_per_step']['max']}), "
          f"{batching['preemptions']} preemptions, attention {batching['attn_implementation']}")
    print(f"items/s static (batch {base.runner.batch_size}) median {s_med:.3f}  continuous median {c_med:.3f}  "
          f"ratio {c_med / s_med:.2f}x")
    print(f"identical outputs vs static: {same}/{len(items)} ({100 * same / len(items):.0f}%); "
          f"static repeats itself {_same(outputs['static'][-1], ref)}/{len(items)}, continuous "
          f"{_same(outputs['continuous'][-1], outputs['continuous'][0])}/{len(items)}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
