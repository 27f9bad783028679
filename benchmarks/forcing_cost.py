"""Teacher-forced scoring time as a share of the candidate's generation time, before and after the
one-pass read (src/evalrun/runners/hf/forced_read.py), side by side in one process on the same machine state.

    python benchmarks/forcing_cost.py configs/baseline.yaml configs/int4kv.yaml configs/sparse50.yaml --limit 4

Generates the baseline and each candidate (stored runs under --out are reused: give a new --out to time generation again), then has
each candidate read the baseline's answers twice with its own loaded runner: through the decode path
(`generate` with every token forced: "before") and in two forward passes per batch where its methods
allow it ("after"), alternating which goes first from one candidate to the next. Prints, per candidate,
its generation time (the manifest's, the figure reports divide by), both forcing times and shares, which
read "after" used, and the largest difference in per-token KL between the two reads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals import api
import evalrun.evals.drift.teacher_force as teacher_force  # noqa: E402
from evalrun.evals.drift import token_drift  # noqa: E402
from evalrun.evals.run import execute, prepare  # noqa: E402
from evalrun.runners.hf.forced_read import one_pass_blocker  # noqa: E402


def _force(prepared, result, base_run, base, one_pass: bool):  # type: ignore[no-untyped-def]
    for f in prepared.dir.glob("forced-*"):
        f.unlink()  # the benchmark's own records: scored again by each read
    prepared.runner.one_pass_forcing = one_pass
    start = time.perf_counter()
    scored = teacher_force.score(prepared, result, base_run, base, lambda _m: None)
    return time.perf_counter() - start, scored


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("baseline")
    ap.add_argument("candidates", nargs="+")
    ap.add_argument("--limit", type=int, default=4)
    ap.add_argument("--out", default="runs-forcing-cost")
    args = ap.parse_args(argv)

    log = lambda m: None  # noqa: E731
    base_run = execute(prepare(api.load(args.baseline), args.out, args.limit), log=log)
    base, _ = teacher_force.baseline_dists(base_run, log)
    if not base:
        print("the baseline stored no logprobs (logprobs: 0?): nothing to force")
        return 2
    print(f"{'candidate':<16} {'items':>5} {'tokens':>6} {'generation s':>12} {'before s':>9} {'before':>7} "
          f"{'after s':>8} {'after':>7}  {'after read':<11} max |dKL|")
    for n, path in enumerate(args.candidates):
        prepared = prepare(api.load(path), args.out, args.limit)
        result = execute(prepared, log=log)
        gen = sum(s.seconds or 0.0 for s in result.manifest.sessions)
        order = [False, True] if n % 2 == 0 else [True, False]
        timed = {one: _force(prepared, result, base_run, base, one) for one in order}
        (before_s, before), (after_s, after) = timed[False], timed[True]
        longest = max(len(r) for r in base.values())
        why = one_pass_blocker(prepared.runner.accelerations, prepared.runner.capabilities, longest)
        diff = max((float(np.abs(token_drift(base[k], after.records[k]).kl - token_drift(base[k], r).kl).max())
                    for k, r in before.records.items() if k in after.records and len(r)), default=0.0)
        tokens = sum(len(base[k]) for k in before.records)
        print(f"{result.name:<16} {len(before.records):>5} {tokens:>6} {gen:>12.2f} {before_s:>9.2f} "
              f"{before_s / gen:>7.0%} {after_s:>8.2f} {after_s / gen:>7.0%}  "
              f"{'one pass' if why is None else 'decode path':<11} {diff:.2g}" + (f"  ({why})" if why else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
