"""Benchmark: `samples_df` and `fields_df` over a stored run of 10,000 items with 8 fields.

Writes a baseline and a candidate run into a temporary run store through the
store's own API, as the runner does (RunStore.write_items, one
RunStore.append per generation, RunStore.write_manifest with the items'
hash), with JSON answers and timings; then times, on one core, building
`samples_df` of the candidate (reading the store), `fields_df` of the candidate
(reading and scoring every field) and `fields_df` of both with the baseline's
flips (and pairing). The acceleration labels import every registered method
(torch, transformers) once per process: that one-off is timed apart, first.
Goal (issue 18): samples_df under 2 s.

    python benchmarks/frames.py [--items 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.compare_10k import FIELDS, _damage, synthetic_values  # noqa: E402
from evalrun.contract.types import Field, Generation, Item  # noqa: E402
from evalrun.evals.frames import fields_df, samples_df  # noqa: E402
from evalrun.evals.store import RunStore  # noqa: E402
from evalrun.runners.accel.registry import method_label  # noqa: E402

GOAL_SECONDS = 2.0


def _generation(item: Item, answer: dict[str, str | None], rng: random.Random) -> Generation:
    output = json.dumps(answer)
    return Generation(item_id=item.id, pack=item.pack, prompt_hash=item.prompt_hash, output=output,
                      prompt_tokens=item.meta.context_tokens or 0, new_tokens=len(output) // 4, seconds=0.9,
                      batch_size=8, prefill_seconds=0.1 + 0.1 * rng.random(), decode_seconds=0.7,
                      started_at=1.7e9 + rng.random())


def build(root: Path, n: int, seed: int = 0) -> tuple[Path, Path]:
    rng = random.Random(seed)
    items, base, cand = [], [], []
    for i in range(n):
        golds = synthetic_values(rng)
        item = Item(id=f"bench/{i}", pack="bench", prompt=f"document {i}", answer_format="json",
                    meta={"context_tokens": rng.choice([600, 2000, 8000])},
                    fields=[Field(name=name, kind=kind, gold=golds[name]) for name, kind in FIELDS])
        items.append(item)
        base.append(_generation(item, golds, rng))
        answer = dict(golds)
        if rng.random() < 0.05:
            victim = rng.choice(["subtotal", "tax", "total", "invoice_number"])
            answer[victim] = _damage(answer[victim] or "", rng)
        cand.append(_generation(item, answer, rng))
    dirs = []
    for name, gens in (("baseline", base), ("int4kv", cand)):
        store = RunStore(root / name)
        store.dir.mkdir(parents=True)
        digest = store.write_items(items)
        accel = {} if name == "baseline" else {"kv_cache": {"quant": "int4", "backend": "quanto"}}
        store.write_manifest({"name": name, "items_sha256": digest, "config": {"acceleration": accel}})
        for g in gens:
            store.append(g)
        dirs.append(store.dir)
    return dirs[0], dirs[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        base, cand = build(Path(tmp), args.items)
        print(f"  {'write 2 runs through RunStore':<44} {time.perf_counter() - t:7.2f} s")
        jobs = {"samples_df(candidate)": lambda: samples_df([cand]),
                "fields_df(candidate)": lambda: fields_df([cand]),
                "fields_df(baseline, candidate; flips)": lambda: fields_df([base, cand], baseline=base)}
        t = time.perf_counter()
        method_label({"kv_cache": {}})  # loads the registry
        print(f"  {'one-off: acceleration registry (imports torch)':<44} {time.perf_counter() - t:7.2f} s")
        timings = {}
        for label, job in jobs.items():
            t = time.perf_counter()
            df = job()
            timings[label] = time.perf_counter() - t
            print(f"  {label:<44} {timings[label]:7.2f} s  ({len(df)} rows)")
    took = timings["samples_df(candidate)"]
    print(f"frames: {args.items} items x {len(FIELDS)} fields; samples_df {took:.2f} s "
          f"(goal < {GOAL_SECONDS:g} s: {'PASS' if took < GOAL_SECONDS else 'MISS'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
