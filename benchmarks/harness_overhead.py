"""Benchmark: evalrun against a bare `model.generate` loop, side by side.

Both paths get the same items (doc_fields per_field: several questions about
each document), the same loaded model, the same batch size and decoding
settings, and the same planned batches. They alternate for several
rounds in one process, so machine noise hits both alike. Printed per round and
as medians: items/s of the bare loop, of evalrun (a full `execute` into a fresh
run store: rendering, batching, timing, fsynced appends, the manifest) and of
evalrun with `prefix_reuse` (each document prefilled once). Goals: evalrun >=
0.95x the bare loop; with prefix reuse >= 2x.

    python benchmarks/harness_overhead.py [--rounds 3] [--documents 2] [--batch 4] [--new-tokens 16]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals.config import parse_config  # noqa: E402
from evalrun.evals.run import execute, prepare  # noqa: E402


def _config(args: argparse.Namespace, prefix_reuse: bool) -> dict:
    return {
        "name": "bench-reuse" if prefix_reuse else "bench",
        "model": args.model,
        "batch_size": args.batch,
        "prefix_reuse": prefix_reuse,
        "generation": {"max_new_tokens": args.new_tokens},
        "tasks": [{"pack": "doc_fields", "mode": "per_field", "documents": args.documents, "lengths": [args.length]}],
    }


def bare_loop(prepared, batches) -> float:
    """A hand-written loop: chat template, left-padded batch, greedy generate, decode."""
    import torch

    runner = prepared.runner
    model, tok = runner.model, runner.tokenizer
    start = time.perf_counter()
    outputs = []
    for batch in batches:
        texts = [tok.apply_chat_template(
            ([{"role": "system", "content": it.system}] if it.system else []) + [{"role": "user", "content": it.prompt}],
            tokenize=False, add_generation_prompt=True) for it in batch]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(**enc, max_new_tokens=runner.generation["max_new_tokens"], do_sample=False,
                                 top_k=None, pad_token_id=tok.pad_token_id)
        outputs.extend(tok.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True))
    return time.perf_counter() - start


def evalrun(args: argparse.Namespace, prefix_reuse: bool, store: Path) -> float:
    prepared = prepare(parse_config(_config(args, prefix_reuse)), store)
    start = time.perf_counter()
    execute(prepared, log=lambda _m: None)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--documents", type=int, default=2)
    parser.add_argument("--length", type=int, default=600)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=16)
    args = parser.parse_args()

    warm = prepare(parse_config(_config(args, False)), tempfile.mkdtemp(prefix="evalrun-bench-"))
    warm.runner._ensure_loaded()  # the model is loaded once per process and shared by every path below
    n = len(warm.items)
    batches = warm.runner.batches(warm.items)
    bare_loop(warm, batches[:1])  # warm-up
    print(f"{n} items ({args.documents} documents x {n // args.documents} questions, {args.length} tokens), "
          f"batch {args.batch}, {args.new_tokens} new tokens, {args.rounds} rounds alternating")
    rows: dict[str, list[float]] = {"bare loop": [], "evalrun": [], "evalrun + prefix reuse": []}
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="evalrun-bench-") as tmp:
            rows["bare loop"].append(n / bare_loop(warm, batches))
            rows["evalrun"].append(n / evalrun(args, False, Path(tmp) / "a"))
            rows["evalrun + prefix reuse"].append(n / evalrun(args, True, Path(tmp) / "b"))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} items/s" for k, v in rows.items()), flush=True)
    bare = statistics.median(rows["bare loop"])
    print("\nmedian items/s and ratio to the bare loop:")
    for name, values in rows.items():
        med = statistics.median(values)
        print(f"  {name:<24} {med:7.2f} items/s   {med / bare:5.2f}x")


if __name__ == "__main__":
    main()
