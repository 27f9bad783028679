"""One prepared check of every lever on one device: the table a GPU session runs first.

    python benchmarks/gpu_check.py                       # CUDA, bf16, the demo packs, every lever
    python benchmarks/gpu_check.py --device cpu --limit 1  # the same script on the CPU
    python benchmarks/gpu_check.py --device cpu --limit 1 --max-new-tokens 4 \
        --lengths needle_numbers=160,doc_fields=400        # short prompts
    python benchmarks/gpu_check.py --device cpu --limit 1 --model DIR   # another model: the test suite's
                                                           # tiny random one checks the mechanics in seconds

Runs the demo packs (configs/baseline.yaml) with the baseline and each lever as
a candidate, in one `compare` (one baseline, every candidate paired with it),
and prints one table: identical outputs, harmful flips, TTFT and TPOT p50
speedups with their paired 95% intervals, peak memory (CUDA's allocator peak
on a GPU), KV bytes per token, and the method's own proof that it took effect.
A lever this machine cannot run (flash_attention_2 without the flash-attn
package or a CUDA device) is listed with the reason, never silently dropped.
Sequential timing on a quiet GPU; on a shared CPU the speedups are noise-prone
(evalrun's interleaved timing is the remedy: see benchmarks/speed_drift.py).
Exit 0 when every lever that could run produced a complete run, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals import api  # noqa: E402
from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config_variant  # noqa: E402
from evalrun.evals.speed import speed_table  # noqa: E402
from evalrun.runners.accel import headlines  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "configs" / "baseline.yaml"

# (name, dotted-key overrides of the baseline): each lever as a candidate
LEVERS: list[tuple[str, dict[str, Any]]] = [
    ("kv-int4-quanto", {"acceleration.kv_cache": {"quant": "int4", "backend": "quanto"}}),
    ("kv-int4-hqq", {"acceleration.kv_cache": {"quant": "int4", "backend": "hqq"}}),
    ("kv-fp8", {"acceleration.kv_cache": {"quant": "fp8", "backend": "fp8"}}),
    ("attn-eager", {"acceleration.kernels": {"attention": "eager"}}),
    ("attn-flash2", {"acceleration.kernels": {"attention": "flash_attention_2"}}),
    ("compile", {"acceleration.compile": {"mode": "default", "cache": "static"}}),
    ("paged-cb", {"batching": {"mode": "continuous"}}),
    ("prompt-lookup", {"acceleration.speculative": {"method": "prompt_lookup", "num_tokens": 10, "max_ngram": 2}}),
    ("sparse50", {"acceleration.sparsity": {"level": 0.5}}),
]


def _variant(name: str, overrides: dict[str, Any], common: dict[str, Any]) -> Any:
    return load_config_variant(BASELINE, {**common, **overrides}, name)


def _pick(names: str | None) -> set[str] | None:
    return {n.strip() for n in names.split(",") if n.strip()} if names else None


def _lengths(spec: str | None) -> dict[str, int]:
    """`pack=tokens,...`: each named pack's prompt lengths replaced by that one length."""
    out = {}
    for part in (spec or "").split(","):
        if part.strip():
            pack, _, n = part.partition("=")
            if not n.strip().isdigit():
                raise ValueError(f"--lengths: {part.strip()!r} is not PACK=TOKENS")
            out[pack.strip()] = int(n)
    return out


def _tasks(lengths: dict[str, int]) -> list[dict[str, Any]]:
    """The baseline's tasks with the asked prompt lengths (an unknown pack name is an error)."""
    tasks = yaml.safe_load(BASELINE.read_text(encoding="utf-8"))["tasks"]
    unknown = set(lengths) - {t["pack"] for t in tasks}
    if unknown:
        raise ValueError(f"--lengths: no task of pack {', '.join(sorted(unknown))} in {BASELINE.name}")
    return [t | {"lengths": [lengths[t["pack"]]]} if t["pack"] in lengths else t for t in tasks]


def _cell(sp: Any) -> str:
    return "-" if sp is None else f"{sp.value:.2f}x [{sp.low:.2f}, {sp.high:.2f}]"


def _proof(manifest: Any) -> str:
    """Each method's headline effects (its proof that it took effect) and the runner's batching mode."""
    written = manifest.to_dict()
    facts = headlines(written.get("effects") or {})
    batching = written.get("batching") or {}
    if batching.get("mode") == "continuous":
        facts.append("paged: " + ", ".join(f"{k} {batching[k]}" for k in ("max_in_flight", "num_blocks",
                                                                          "block_size") if k in batching))
    return "; ".join(facts) or "-"


def rows(report: Any) -> list[dict[str, Any]]:
    """One row per candidate: the figures the table prints (and --json writes)."""
    table = {r.run: r for r in speed_table(report).rows}
    out = []
    for cand in report.candidates:
        comp, run, verdict = cand.comparison, cand.run, cand.verdict
        n = sum(pc.n for pc in comp.packs)
        speed = table.get(run.name)
        out.append({
            "lever": run.name,
            "status": run.manifest.status,
            "identical": sum(pc.identical_outputs for pc in comp.packs), "items": n,
            "harmful_items": sum(pc.harmful_items for pc in comp.packs),
            "ttft": _cell(speed.speedups.get("ttft_p50")) if speed else "-",
            "tpot": _cell(speed.speedups.get("tpot_p50")) if speed else "-",
            "peak_memory_bytes": speed.peak_memory_bytes if speed else None,
            "peak_memory_kind": speed.peak_memory_kind if speed else None,
            "kv_bytes_per_token": speed.kv_bytes_per_token if speed else None,
            "speed_note": speed.speed_note if speed else None,
            "proof": _proof(run.manifest),
            "verdict": verdict.status,
        })
    return out


def _mib(n: float | None) -> str:
    return "-" if n is None else f"{n / 2**20:.0f} MiB"


def print_table(found: list[dict[str, Any]], skipped: list[tuple[str, str]], seconds: float, where: str) -> None:
    head = f"{'lever':<15}{'identical':>11}{'harmful':>9}{'TTFT p50 speedup':>24}{'TPOT p50 speedup':>24}" \
           f"{'peak mem':>10}{'KV B/tok':>10}  proof"
    print(f"\nevalrun GPU check on {where}: {seconds:.0f} s\n{head}")
    for r in found:
        kv = "-" if r["kv_bytes_per_token"] is None else f"{r['kv_bytes_per_token']:.0f}"
        print(f"{r['lever']:<15}{r['identical']:>5}/{r['items']:<5}{r['harmful_items']:>9}{r['ttft']:>24}"
              f"{r['tpot']:>24}{_mib(r['peak_memory_bytes']):>10}{kv:>10}  {r['proof']}")
        if r["speed_note"]:
            print(f"{'':15}speed: {r['speed_note']}")
        if r["status"] != "complete":
            print(f"{'':15}run status: {r['status']}")
    for name, why in skipped:
        print(f"{name:<15}not run: {why}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--dtype", default=None, help="default: bfloat16 on cuda, float32 on cpu")
    ap.add_argument("--limit", type=int, default=None, help="only the first N items of each pack")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: the baseline config's")
    ap.add_argument("--lengths", default=None, metavar="PACK=TOKENS,...",
                    help="prompt length per pack (default: the baseline config's); shorter prompts check the "
                         "script and every lever's effect in less time")
    ap.add_argument("--model", default=None, help="a model other than the baseline's (alias, HF id, folder or "
                                                      ".gguf); a tiny random model checks the script, not accuracy")
    ap.add_argument("--only", default=None, help="comma-separated lever names (default: all)")
    ap.add_argument("--skip", default=None, help="comma-separated lever names to leave out")
    ap.add_argument("--out", default=None, help="run store (default: a fresh temporary one)")
    ap.add_argument("--json", default=None, help="also write the rows as JSON here")
    args = ap.parse_args(argv)

    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("no CUDA device here: run with --device cpu", file=sys.stderr)
            return 2
    common: dict[str, Any] = {"device": args.device,
                              "dtype": args.dtype or ("bfloat16" if args.device == "cuda" else "float32")}
    if args.model:
        common["model"] = args.model
    if args.max_new_tokens:
        common["generation.max_new_tokens"] = args.max_new_tokens
    if args.lengths:
        try:
            common["tasks"] = _tasks(_lengths(args.lengths))
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
    only, skip = _pick(args.only), _pick(args.skip) or set()
    unknown = ((only or set()) | skip) - {n for n, _ in LEVERS}
    if unknown:
        print(f"unknown lever(s): {', '.join(sorted(unknown))}; known: {', '.join(n for n, _ in LEVERS)}",
              file=sys.stderr)
        return 2
    base = _variant("baseline", {}, common)
    candidates, skipped = [], []
    for name, overrides in LEVERS:
        if (only and name not in only) or name in skip:
            continue
        if name == "attn-flash2" and importlib.util.find_spec("flash_attn") is None:
            skipped.append((name, "the flash-attn package is not installed"))
            continue
        try:
            candidates.append(_variant(name, overrides, common))
        except ConfigError as exc:
            skipped.append((name, str(exc)))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="evalrun-gpu-check-") as tmp:
        report = api.compare(base, candidates, out=args.out or tmp, limit=args.limit, early_stop=False,
                             log=lambda line: print(line, file=sys.stderr))
        found = rows(report)
    where = f"{args.device} ({common['dtype']})"
    if args.device == "cuda":
        import torch

        where = f"{torch.cuda.get_device_name(0)} ({common['dtype']}, torch {torch.__version__})"
    print_table(found, skipped, time.perf_counter() - start, where)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": where, "rows": found, "skipped": skipped}, indent=2))
    return 0 if all(r["status"] == "complete" for r in found) else 1


if __name__ == "__main__":
    sys.exit(main())
