"""A/A speed under a load that changes half-way: sequential timing against interleaved timing.

    python benchmarks/speed_drift.py [--config configs/latency.yaml] [--count 12] [--burners 2]

The candidate is the baseline itself, so the true speedup is 1.00x. Sequential
timing generates the baseline, then the candidate, with CPU-burning processes
started half-way (when the candidate starts) and stopped at its end: the
speedup it reports is the load, not the method. Interleaved timing re-times the
same batches of both with the two models loaded in one process, the order
alternating (src/evalrun/evals/speed/interleave.py), with the burners started half-way through
the pairs. Prints both speedups (TTFT, TPOT and E2EL p50, with their 95% paired
intervals) side by side; exits 1 when the interleaved TPOT p50 speedup is
outside [0.95, 1.05]. Runs go to a fresh temporary store every time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals.speed import interleave
from evalrun.evals.timing import latency  # noqa: E402
from evalrun.evals.config import load_config_variant  # noqa: E402
from evalrun.evals.run import execute, prepare  # noqa: E402
from evalrun.evals.speed import interleaved_of  # noqa: E402

METRICS = ("ttft_p50", "tpot_p50", "e2el_p50")
BURN = "while True: pass"


class Burners:
    """CPU-burning processes (a shared host's other tenant), started and stopped on demand."""

    def __init__(self, n: int):
        self.n, self.procs = n, []  # type: ignore[var-annotated]

    def start(self) -> None:
        if not self.procs:
            self.procs = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(self.n)]

    def stop(self) -> None:
        for p in self.procs:
            p.kill()
            p.wait()
        self.procs = []


def _line(name: str, base: dict, cand: dict, basis: str) -> str:
    cells = []
    for m in METRICS:
        sp = latency.speedup(base, cand, m, basis=basis)
        cells.append("-" if sp is None else f"{sp.value:.2f}x [{sp.low:.2f}, {sp.high:.2f}]")
    return f"{name:<13}" + "".join(f"{c:>24}" for c in cells)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/latency.yaml")
    ap.add_argument("--count", type=int, default=12, help="items (one shape, batch 1)")
    ap.add_argument("--input-tokens", type=int, default=128)
    ap.add_argument("--output-tokens", type=int, default=32)
    ap.add_argument("--burners", type=int, default=2, help="CPU-burning processes started half-way")
    args = ap.parse_args(argv)

    shape = {"name": "drift", "input_tokens": args.input_tokens, "output_tokens": args.output_tokens}
    over = {"batch_size": 1, "tasks": [{"pack": "latency", "shapes": [shape], "count": args.count}]}
    base_cfg = load_config_variant(args.config, over, "aa-base")
    cand_cfg = load_config_variant(args.config, over, "aa-repeat")
    burners = Burners(args.burners)
    with tempfile.TemporaryDirectory() as out:
        base_p, cand_p = prepare(base_cfg, out), prepare(cand_cfg, out)
        started = time.perf_counter()
        base = execute(base_p, log=lambda m: None)
        burners.start()  # half-way: the candidate runs on a busier machine
        try:
            cand = execute(cand_p, log=lambda m: None)
        finally:
            burners.stop()
        sequential = time.perf_counter() - started

        def half_way(done: int, total: int) -> None:
            if done == total // 2:
                burners.start()

        started = time.perf_counter()
        try:
            records = interleave.retime(base_p, cand_p, args.count, log=lambda m: None, on_pair=half_way)
        finally:
            burners.stop()
        interleaved = time.perf_counter() - started
        inter = interleaved_of(records, base_p.key)
        assert inter is not None
    print(f"A/A on {base_cfg.model}, latency shape {args.input_tokens} in / {args.output_tokens} out, "
          f"{args.count} items at batch 1; {args.burners} CPU burners started half-way. The true speedup is 1.00x.")
    print(f"{'timing':<13}" + "".join(f"{m + ' speedup':>24}" for m in METRICS))
    print(_line("sequential", base.generations, cand.generations, "stored runs") + f"   ({sequential:.0f} s)")
    print(_line("interleaved", inter.base, inter.cand, inter.basis) + f"   ({interleaved:.0f} s)")
    sp = latency.speedup(inter.base, inter.cand, "tpot_p50")
    ok = sp is not None and 0.95 <= sp.value <= 1.05
    print(f"interleaved TPOT p50 speedup {'within' if ok else 'OUTSIDE'} [0.95, 1.05]")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
