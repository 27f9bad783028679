"""Where does each serving config's best batch size land under an SLO? A load sweep over batch sizes.

    python benchmarks/latency_sweep.py [--slo tpot=60ms] [--batch 1,2,4,8] [--workload short] [--count 8]
                                       [--limit N] [--out runs/bench-latency-sweep] [--json PATH] [--markdown PATH]

Runs `configs/latency.yaml` (the baseline), `configs/latency-int4kv.yaml` (4-bit quanto KV
cache) and `configs/latency-pld.yaml` (prompt-lookup speculative decoding) on the default
model at every batch size, all three on the latency pack (`--workload`, default `short`:
about 200 tokens in, 300 out, `--count` items), each point timed afresh in its own run
directory (src/evalrun/evals/run/_load_sweep.py, the same code as `evalrun sweep --load`). Prints per config
its throughput-latency table (request and output throughput, TTFT/TPOT/ITL/E2EL p50 and
p99, goodput under the SLO), every metric's p99 at each batch size, and the best batch
size: the most good requests/s under the SLO.

Speculative decoding generates one sequence at a time, so its points above batch 1 run at
batch 1 (each row says so): its curve is flat, which is the finding a team needs when it
re-tunes the batch size for it. Long: 12 points of 8 x 300 tokens on a CPU. For a quick
check that it works: `--workload smoke:64:8 --count 1 --batch 1,2`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.markup import escape  # noqa: E402

from evalrun.cli_app import make_progress  # noqa: E402
from evalrun.cli_outputs import json_ready, write_outputs  # noqa: E402
from evalrun.reports.sweep import load_sweep_markdown  # noqa: E402
from evalrun.evals.config import load_config  # noqa: E402
from evalrun.evals.timing import METRICS  # noqa: E402
from evalrun.evals.config import parse_load, parse_workload, value_label  # noqa: E402
from evalrun.evals.run import LoadSweep, load_sweep  # noqa: E402
from evalrun.evals.timing import parse_slo  # noqa: E402
from evalrun.reports.sweep import render_load_sweep  # noqa: E402
from evalrun.reports.text import seconds  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ["configs/latency.yaml", "configs/latency-int4kv.yaml", "configs/latency-pld.yaml"]


def print_p99(console: Console, sweep: LoadSweep) -> None:
    """Every metric's p99 at each batch size, with goodput, and the best batch size per config."""
    for curve in sweep.curves:
        console.print(f"\n[bold]{escape(curve.config)}[/] (p99 per batch size; goodput under {escape(curve.slo or '-')})")
        for i, p in enumerate(curve.points):
            p99 = ", ".join(f"{m.upper()} {seconds(getattr(p, m).p99)}" for m in METRICS)
            good = (f"good {p.goodput.good}/{p.goodput.requests} = {p.goodput.rate or 0:.3g} req/s"
                    if p.goodput else "no SLO")
            best = "  <- best" if curve.best == i else ""
            console.print(f"  batch_size {value_label(p.value)}: {p99}; {p.request_throughput or 0:.3g} req/s; "
                          f"{escape(good)}{best}" + (f"  ({escape(p.note)})" if p.note else ""))
        best = value_label(curve.points[curve.best].value) if curve.best is not None else "none (no setting meets the SLO)"
        console.print(f"  best batch size: {best}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slo", default="tpot=60ms", help="SLOs for goodput, e.g. ttft=500ms,tpot=60ms")
    ap.add_argument("--batch", default="1,2,4,8", help="comma-separated batch sizes")
    ap.add_argument("--workload", default="short", help="latency pack shapes: short, long or NAME:IN:OUT")
    ap.add_argument("--count", type=int, default=8, help="items per shape")
    ap.add_argument("--limit", type=int, default=None, help="only the first N items of the pack (a quick check)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "bench-latency-sweep")
    ap.add_argument("--json", type=Path, default=None, help="write the curves as JSON")
    ap.add_argument("--markdown", type=Path, default=None, help="write the tables as Markdown")
    args = ap.parse_args()

    console = Console(width=None if sys.stdout.isatty() else 160)
    _, values = parse_load(f"batch_size={args.batch}")
    configs = [load_config(ROOT / c) for c in CONFIGS]
    started = time.perf_counter()
    sweep = load_sweep(configs, "batch_size", values, parse_slo(args.slo), out=args.out, limit=args.limit,
                       log=lambda m: print(m, file=sys.stderr), progress_factory=make_progress,
                       workload=parse_workload(args.workload, args.count))
    render_load_sweep(console, sweep)
    print_p99(console, sweep)
    console.print(f"\n{len(configs)} configs x {len(values)} batch sizes in {time.perf_counter() - started:.0f} s")
    md = load_sweep_markdown(sweep)
    jobs = [("JSON", args.json, lambda: json.dumps(json_ready(sweep.model_dump(mode="json")), indent=2,
                                                  allow_nan=False) + "\n"),
            ("Markdown summary", args.markdown, lambda: md)]
    failures = write_outputs(jobs, md, lambda line: print(line, file=sys.stderr))
    for line in failures:
        print(f"error: {line}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
