"""How accurate are the speed metrics? The real openai runner against a loopback server with
injected timings, and the hf runner on a model whose forward calls take a known time.

    python benchmarks/timing_accuracy.py [--scenarios c1,c8,c32,c8-lockstep,c32-lockstep-5ms]
                                         [--thread] [--no-hf] [--all-rows]

The openai scenarios are tests/runners/timing_scenarios.py's (the ones the tests assert, then
two the tests leave alone: every request in lockstep, and 32 streams at 5 ms gaps). For each it
prints every metric at p50/p90/p95/p99: injected (the server's schedule), sent (what it put on
the wire), measured (evals.timing.latency.request_metrics on the stored run), the error against the
injected value in ms and %, and whether it is within 5% or 2 ms; then per scenario the worst
error against injected and against sent (the runner's own), the worst single request, how late
the server itself was, and goodput injected vs measured. `--thread` runs each scenario again
with the server in this process (sharing the runner's GIL) to show why the tests do not.
The hf part pads each forward call to 60 ms (prompt) and 15 ms (step) on the tiny random model
and sets TTFT, TPOT, ITL and E2EL beside those times plus generate's own measured overhead.
Takes about a minute.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals.stats import percentile  # noqa: E402
from tests.runners.timing_scenarios import (  # noqa: E402
    SCENARIOS, STRESS, Row, goodput_check, percentile_rows, request_errors, run_served, server_lateness, tolerance,
)

HF_PREFILL, HF_DECODE, HF_TOKENS = 0.060, 0.015, 8


def _print_rows(rows: list[Row], all_rows: bool) -> None:
    print(f"  {'metric':6} {'pct':4} {'injected':>9} {'sent':>9} {'measured':>9} {'err ms':>8} {'err %':>7}  within")
    for r in rows:
        if all_rows or not r.ok or r.pct in ("p50", "p99"):
            print(f"  {r.metric:6} {r.pct:4} {r.injected * 1e3:9.3f} {r.sent * 1e3:9.3f} {r.measured * 1e3:9.3f} "
                  f"{r.error * 1e3:+8.3f} {r.error_pct:+6.2f}%  {'yes' if r.ok else 'NO'}")


def _openai(name: str, process: bool, all_rows: bool, out: Path) -> dict[str, object]:
    scenario = {**SCENARIOS, **STRESS}[name]
    run = run_served(scenario, out)
    rows = percentile_rows(run)
    worst = max(rows, key=lambda r: abs(r.error) / tolerance(r.injected))
    worst_runner = max(rows, key=lambda r: abs(r.measured - r.sent))
    truth, measured, _ = goodput_check(run)
    late = server_lateness(run.state)
    where = "child process" if process else "this process (shares the runner's GIL)"
    print(f"\n{name}: {scenario.requests} requests, concurrency {scenario.concurrency}, "
          f"rate {scenario.request_rate or 'all at once'}, server in {where}, {run.wall_seconds:.2f} s")
    _print_rows(rows, all_rows)
    per_request = request_errors(run)
    print(f"  worst vs injected: {worst.metric} {worst.pct} {worst.error * 1e3:+.3f} ms ({worst.error_pct:+.2f}%); "
          f"worst vs sent (runner's own): {worst_runner.metric} {worst_runner.pct} "
          f"{(worst_runner.measured - worst_runner.sent) * 1e3:+.3f} ms; {sum(not r.ok for r in rows)} of {len(rows)} "
          f"rows outside 5%/2 ms")
    print("  worst single request vs sent (ms): " + ", ".join(f"{m} {v * 1e3:+.2f}" for m, v in per_request.items())
          + f"; server late p50 {percentile(late, 50) * 1e3:.2f} ms, p99 {percentile(late, 99) * 1e3:.2f} ms")
    print(f"  goodput ({scenario.slo.text()}): injected {truth} of {scenario.requests}, measured {measured}")
    return {"name": name, "where": "process" if process else "thread", "worst": worst, "runner": worst_runner,
            "good": (truth, measured), "bad": sum(not r.ok for r in rows)}


def _hf(out: Path) -> list[str]:
    from evalrun.evals.config import parse_config
    from evalrun.evals.run import prepare
    from evalrun.runners.models import local_dir, resolve_model
    from tests.conftest import write_tiny_model
    from tests.runners.paced_model import ForwardPacer, calibrate

    import torch

    torch.set_num_threads(1)  # idle OpenMP workers waking late on a shared machine cost steps tens of ms
    model_dir = write_tiny_model(out / "tiny", local_dir(resolve_model("smollm2-135m")))
    lines = []
    for batch in (1, 4):
        cfg = parse_config({"name": f"paced-{batch}", "model": str(model_dir), "batch_size": batch,
                            "tasks": [{"pack": "latency", "count": 4,
                                       "shapes": [{"name": "s", "input_tokens": 64, "output_tokens": HF_TOKENS}]}]})
        prepared = prepare(cfg, out / f"b{batch}")
        runner, items = prepared.runner, prepared.items

        def run(pacer: ForwardPacer) -> list:  # type: ignore[type-arg]
            gens: list = []  # type: ignore[type-arg]
            runner._ensure_loaded()  # type: ignore[attr-defined]
            pacer.attach(runner.model)  # type: ignore[attr-defined]
            try:
                runner.run(prepared.request(items), gens.append)
            finally:
                pacer.detach()
            return gens

        run(ForwardPacer())  # warm-up
        oh = calibrate(run)
        gens = run(ForwardPacer(HF_PREFILL, HF_DECODE))
        ttft, gap = HF_PREFILL + oh.first, HF_DECODE + oh.step
        print(f"\nhf batch {batch}: forward calls padded to {HF_PREFILL * 1e3:.0f} ms / {HF_DECODE * 1e3:.0f} ms; "
              f"generate's own overhead (unpadded run) {oh.first * 1e3:.3f} ms to the first token, "
              f"{oh.step * 1e3:.3f} ms per step")
        got = {"ttft": [g.prefill_seconds for g in gens], "tpot": [g.decode_seconds / (g.new_tokens - 1) for g in gens],
               "itl": [x for g in gens for x in g.itl_seconds],
               "e2el": [g.prefill_seconds + g.decode_seconds for g in gens]}
        want = {"ttft": ttft, "tpot": gap, "itl": gap, "e2el": ttft + (HF_TOKENS - 1) * gap}
        for metric, values in got.items():
            err = max((v - want[metric] for v in values), key=abs)
            lines.append(f"hf batch {batch} {metric}: worst {err * 1e3:+.3f} ms ({100 * err / want[metric]:+.2f}%)")
            print(f"  {metric:5} expected {want[metric] * 1e3:8.3f} ms  measured median "
                  f"{statistics.median(values) * 1e3:8.3f}  worst {err * 1e3:+.3f} ms ({100 * err / want[metric]:+.2f}%)"
                  f"  {'yes' if abs(err) <= tolerance(want[metric]) else 'NO'}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default=",".join([*SCENARIOS, *STRESS]))
    ap.add_argument("--thread", action="store_true", help="also run each with the server in this process")
    ap.add_argument("--no-hf", action="store_true")
    ap.add_argument("--all-rows", action="store_true", help="print p90 and p95 rows too (default: p50, p99, misses)")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(args.scenarios.split(",")):
            for process in (True, False) if args.thread else (True,):
                results.append(_openai(name, process, args.all_rows, Path(tmp) / f"{i}-{process}"))
        hf = [] if args.no_hf else _hf(Path(tmp))
    print("\nworst error per scenario (vs injected; vs what the server sent = the runner's own):")
    for r in results:
        w, rn = r["worst"], r["runner"]
        truth, measured = r["good"]  # type: ignore[misc]
        print(f"  {r['name']:17} {r['where']:7} {w.metric} {w.pct} {w.error * 1e3:+7.3f} ms ({w.error_pct:+6.2f}%)"  # type: ignore[attr-defined]
              f"   runner {rn.metric} {rn.pct} {(rn.measured - rn.sent) * 1e3:+7.3f} ms"  # type: ignore[attr-defined]
              f"   outside 5%/2ms: {r['bad']:2}   goodput {measured}/{truth}")
    for line in hf:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
