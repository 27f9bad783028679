"""Benchmark: compare two stored runs of 10,000 items with 8 fields each.

Builds a baseline and a candidate run synthetically in a temporary run store
(items.jsonl + samples.jsonl, JSON answers with a few damaged fields), then
times the stages of a comparison on one core: reading the store, scoring every
field, pairing + transitions + paired bootstrap (2,000 resamples), and the
Markdown and JUnit renderings. Target: pairing through JUnit under 10 s.

    python benchmarks/compare_10k.py [--items 10000] [--strict]
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

from evalrun.evals.gate import evaluate  # noqa: E402
from evalrun.evals.compare import pair  # noqa: E402
from evalrun.evals.scoring import score_run  # noqa: E402
from evalrun.evals.store import RunStore  # noqa: E402
from evalrun.contract.types import Field, Generation, Item  # noqa: E402
from evalrun.reports.formats import render_junit  # noqa: E402
from evalrun.reports.formats import render_markdown  # noqa: E402

FIELDS = [("invoice_number", "id"), ("issue_date", "date"), ("due_date", "date"), ("supplier", "text"),
          ("subtotal", "amount"), ("tax", "amount"), ("total", "amount"), ("term_months", "number")]


def synthetic_values(rng: random.Random) -> dict[str, str | None]:
    total = rng.randint(1000, 99999)
    return {
        "invoice_number": f"INV-2024-{rng.randint(0, 999999):06d}",
        "issue_date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "due_date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "supplier": rng.choice(["Acme Logistics GmbH", "Northwind Traders Ltd", "Globex Services BV"]),
        "subtotal": f"EUR {total}.{rng.randint(0, 99):02d}",
        "tax": f"EUR {total // 5}.{rng.randint(0, 99):02d}",
        "total": f"EUR {total + total // 5}.{rng.randint(0, 99):02d}",
        "term_months": None if rng.random() < 0.2 else str(rng.choice([6, 12, 24, 36])),
    }


def _damage(value: str, rng: random.Random) -> str:
    digits = [i for i, ch in enumerate(value) if ch.isdigit()]
    i = rng.choice(digits)
    return value[:i] + value[i + 1:]


def build(root: Path, n: int, seed: int = 0) -> tuple[RunStore, RunStore]:
    rng = random.Random(seed)
    base, cand = RunStore(root / "baseline"), RunStore(root / "candidate")
    items, base_lines, cand_lines = [], [], []
    for i in range(n):
        golds = synthetic_values(rng)
        item = Item(id=f"bench/{i}", pack="bench", prompt=f"document {i}", meta={"answer_format": "json",
                    "context_tokens": rng.choice([600, 2000, 8000])},
                    fields=[Field(name=name, kind=kind, gold=golds[name]) for name, kind in FIELDS])
        items.append(item)
        answer = {k: v for k, v in golds.items()}
        base_out = json.dumps(answer)
        if rng.random() < 0.05:
            victim = rng.choice(["subtotal", "tax", "total", "invoice_number"])
            answer[victim] = _damage(answer[victim], rng)
        cand_out = json.dumps(answer)
        base_lines.append(Generation(item_id=item.id, pack="bench", prompt_hash=item.prompt_hash, output=base_out))
        cand_lines.append(Generation(item_id=item.id, pack="bench", prompt_hash=item.prompt_hash, output=cand_out))
    for store, gens in ((base, base_lines), (cand, cand_lines)):
        store.dir.mkdir(parents=True)
        store.items_path.write_text("".join(it.model_dump_json() + "\n" for it in items))
        store.samples_path.write_text("".join(g.model_dump_json() + "\n" for g in gens))
    return base, cand


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--strict", action="store_true", help="exit 1 when over the target")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_store, cand_store = build(Path(tmp), args.items)
        timings: dict[str, float] = {}
        t = time.perf_counter()
        items = base_store.read_items()
        base_gen, cand_gen = base_store.read_samples(), cand_store.read_samples()
        timings["read store"] = time.perf_counter() - t
        t = time.perf_counter()
        base_scored, cand_scored = score_run(items, base_gen), score_run(items, cand_gen)
        timings["score 2 x fields"] = time.perf_counter() - t
        t = time.perf_counter()
        comparison = pair(base_scored, cand_scored, "baseline", "candidate", n_resamples=2000)
        verdict = evaluate(comparison)
        timings["pair + transitions + bootstrap + gate"] = time.perf_counter() - t
        t = time.perf_counter()
        render_markdown([comparison], [verdict])
        render_junit([verdict], Path(tmp) / "j.xml")
        timings["markdown + junit"] = time.perf_counter() - t
    gated = timings["pair + transitions + bootstrap + gate"] + timings["markdown + junit"]
    fields = args.items * len(FIELDS)
    for stage, seconds in timings.items():
        print(f"  {stage:<40} {seconds:7.2f} s")
    print(f"compare_10k: {args.items} items x {len(FIELDS)} fields ({fields} field scores per run); "
          f"pairing through JUnit {gated:.2f} s (target < 10 s: {'PASS' if gated < 10 else 'FAIL'}); "
          f"with store reading and scoring {sum(timings.values()):.2f} s; "
          f"harmful flips {len(comparison.harmful)}")
    return 1 if args.strict and gated >= 10 else 0


if __name__ == "__main__":
    raise SystemExit(main())
