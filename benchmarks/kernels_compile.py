"""Attention kernels and torch.compile against their baselines: identical outputs and speed, side by side.

    python benchmarks/kernels_compile.py [--limit N] [--out runs] [--timing-batches 4] [--control] [--no-compile]

Two comparisons on the demo packs (configs/baseline.yaml's 25 items):
sdpa attention against an eager-attention baseline (configs/kernels-sdpa.yaml vs
configs/baseline-eager.yaml), and the compiled forward pass against the default
baseline (configs/compile.yaml vs configs/baseline.yaml); `--control` adds
`compile` with dynamo's eager backend and the same static cache, which runs
the same operations uncompiled: what the static cache alone changes.
Both are lossless on paper, so every changed output is a numerical divergence.

Speed is timed interleaved (a sample of batches re-timed with both sides in one
process, the order alternating A B, B A), so a changing machine load does not
bias the ratio; the compile candidate warms up on every re-timed batch untimed,
so its ratio is steady-state speed, and the compile time is printed apart (the
run's warm-up, and what still compiled inside its timed batches). Stored runs
in --out are reused.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals import api
from evalrun.evals.timing import latency  # noqa: E402
from evalrun.evals.config import load_config_variant  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("e2el_p50", "tpot_p50", "ttft_p50")


def _variant(name: str, batches: int, over: dict | None = None, rename: str | None = None):  # type: ignore[no-untyped-def]
    path = ROOT / "configs" / f"{name}.yaml"
    return load_config_variant(path, {"timing": "interleaved", "timing_batches": batches, **(over or {})},
                               rename or name)


def _row(label: str, report, result) -> str:  # type: ignore[no-untyped-def]
    comp = next(c for c in report.comparisons if c.candidate == result.name)
    same, n = sum(pc.identical_outputs for pc in comp.packs), sum(pc.n for pc in comp.packs)
    firsts = [i for pc in comp.packs for i in getattr(pc, "first_divergence", [])]
    base, cand, basis = latency.pair_timings(report.baseline, result)
    cells = []
    for m in METRICS:
        sp = latency.speedup(base, cand, m, basis=basis)
        cells.append("-" if sp is None else f"{sp.value:.2f}x [{sp.low:.2f},{sp.high:.2f}]")
    per_pack = " ".join(f"{pc.pack} {pc.identical_outputs}/{pc.n}" for pc in comp.packs)
    first = f"{statistics.median(firsts):g}" if firsts else "-"
    out = (f"{label:<26} {same:>3}/{n:<3} {100 * same / n if n else 0:5.1f}%  {first:>9}  "
           + "  ".join(f"{c:>20}" for c in cells) + f"  ({per_pack}; {basis})")
    effects = result.manifest.to_dict().get("effects") or {}
    eff = effects.get("compile")
    if isinstance(eff, dict) and eff.get("compiled"):
        out += (f"\n{'':<26} compile: warm-up {eff.get('warmup_seconds')} s (dynamo/inductor "
                f"{eff.get('compile_seconds')} s), graphs {eff.get('graphs_compiled')}, recompilations in timed "
                f"batches {eff.get('recompilations')} ({eff.get('timed_compile_seconds')} s), frames not compiled "
                f"{eff.get('frames_not_compiled')}, graph breaks {eff.get('graph_breaks')}")
    kern = effects.get("kernels")
    if isinstance(kern, dict):
        out += f"\n{'':<26} kernels: {kern.get('used')} (was {kern.get('before')}), calls {kern.get('attention_calls')}"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--timing-batches", type=int, default=4, help="batches per side re-timed interleaved")
    ap.add_argument("--control", action="store_true", help="also compile with backend eager (static cache alone)")
    ap.add_argument("--no-compile", action="store_true", help="only the attention kernels")
    args = ap.parse_args(argv)
    quiet = lambda m: None  # noqa: E731
    started = time.perf_counter()
    rows = []
    eager = api.load(ROOT / "configs" / "baseline-eager.yaml")
    sdpa = _variant("kernels-sdpa", args.timing_batches)
    rep = api.compare(eager, [sdpa], out=args.out, limit=args.limit, log=quiet, early_stop=False)
    rows += [_row("sdpa vs eager attention", rep, r.run) for r in rep.candidates]
    if not args.no_compile:
        cands = [_variant("compile", args.timing_batches)]
        if args.control:
            over = {"acceleration.compile.backend": "eager"}
            cands.append(_variant("compile", args.timing_batches, over, "compile-eager-backend"))
        base = api.load(ROOT / "configs" / "baseline.yaml")
        rep = api.compare(base, cands, out=args.out, limit=args.limit, log=quiet, early_stop=False)
        labels = ["compiled vs baseline", "dynamo eager vs baseline"]
        rows += [_row(label, rep, r.run) for label, r in zip(labels, rep.candidates)]
    print(f"{'comparison':<26} {'identical outputs':<17} {'1st diff':>9}  "
          + "  ".join(f"{m + ' speedup':>20}" for m in METRICS))
    print("\n".join(rows))
    print(f"({time.perf_counter() - started:.0f} s; speedup = baseline / candidate latency, median of per-item "
          "ratios with its 95% bootstrap interval; 1st diff = median token index of the first divergent token)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
