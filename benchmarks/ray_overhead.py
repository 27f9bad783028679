"""Benchmark: executor: ray against the in-process runner on the demo packs, side by side in one run.

Arms, alternating in every round (A B C D, then D C B A) so the machine's load
hits all alike, each generating every item of configs/baseline.yaml (fp32, CPU)
into a fresh run directory through `execute`, as `evalrun run` does:

  A  in process, torch's threads (2 here)
  B  one Ray actor with the same threads (cpus_per_actor = all cores): the overhead
  C  two Ray actors with one thread each, against A's one process with two
  D  as C, with one actor killed (SIGKILL) once the first unit came back

Timed: the run's generation (`execute`'s session seconds: planning, sending
units, generating, storing), not starting Ray or loading a model: each Ray arm
first generates a few items untimed on its actors (the pool is made and the
model loaded there). Printed: items/s per round, medians, the median per-round
ratio to A, whether every output equals A's, and for D the items generated,
lost and stored twice, and the time it took beyond C. Goals (issue 18):
B's overhead under 10%; D all, 0, 0.

    python benchmarks/ray_overhead.py [--rounds 2] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals.config import load_config_variant  # noqa: E402
from evalrun.evals.run import execute, prepare  # noqa: E402
from evalrun.runners.ray import executor as ray_executor  # noqa: E402

CORES = os.cpu_count() or 1
ARMS: dict[str, dict[str, Any] | None] = {
    "A in process": None,
    f"B 1 actor x {CORES} threads": {"actors": 1, "cpus_per_actor": CORES},
    "C 2 actors x 1 thread": {"actors": 2, "cpus_per_actor": 1},
    "D as C, one actor killed": {"actors": 2, "cpus_per_actor": 1},
}


def _config(ray: dict[str, Any] | None, config: str) -> Any:
    over: dict[str, Any] = {"device": "cpu", "dtype": "float32"}
    if ray is not None:
        over |= {"executor": "ray", "ray": ray}
    return load_config_variant(config, over, "ray-bench")


def _lines(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in (run_dir / "samples.jsonl").read_text().splitlines() if ln.strip()]


def _one(name: str, ray: dict[str, Any] | None, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    if ray is not None:  # untimed: the pool made, the model loaded on its actors
        ray_executor.close_pools()
        execute(prepare(_config(ray, args.config), tempfile.mkdtemp(dir=root), limit=1), log=lambda _: None)
    prepared = prepare(_config(ray, args.config), tempfile.mkdtemp(dir=root), limit=args.limit)
    killed: list[int] = []
    if name.startswith("D"):
        def hook(actor: str, done: int) -> None:
            if not killed:
                victim = next(a for a in prepared.runner.actors if a.name == "actor-1")
                os.kill(victim.info["pid"], signal.SIGKILL)
                killed.append(victim.info["pid"])
        prepared.runner.on_unit = hook
    result = execute(prepared, log=lambda _: None)
    seconds = result.manifest.sessions[-1].seconds
    lines = _lines(result.dir)
    ids = [ln["item_id"] for ln in lines]
    out = {"rate": len(prepared.items) / seconds, "seconds": seconds,
           "outputs": {ln["item_id"]: ln["output_ids"] for ln in lines},
           "generated": len(set(ids)), "lost": len({it.id for it in prepared.items} - set(ids)),
           "duplicated": len(ids) - len(set(ids)), "items": len(prepared.items)}
    if ray is not None:
        out["failures"] = result.manifest.executor["failures"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/baseline.yaml")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    ray_executor.connect(ray_executor.RaySettings())
    root = Path(tempfile.mkdtemp(prefix="evalrun-ray-bench-"))
    names = list(ARMS)
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    _one(names[0], None, args, root)  # the in-process model loaded, first-call costs paid
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            runs[name].append(_one(name, ARMS[name], args, root))
        print(f"round {r + 1}: " + ", ".join(f"{n.split()[0]} {runs[n][-1]['rate']:.3f} items/s" for n in names),
              flush=True)
    ref = runs[names[0]]
    print(f"\n{ref[0]['items']} items of {args.config}, fp32 on {CORES} CPU cores, {args.rounds} rounds; "
          "median items/s, median per-round ratio to A, outputs equal to A's:")
    for name in names:
        rates = [x["rate"] for x in runs[name]]
        ratio = statistics.median(x["rate"] / a["rate"] for x, a in zip(runs[name], ref))
        same = sum(1 for x in runs[name] for k, v in ref[0]["outputs"].items() if x["outputs"].get(k) == v)
        print(f"  {name:32s} {statistics.median(rates):.3f} items/s  {ratio:.3f}x  "
              f"outputs {same}/{len(ref[0]['outputs']) * len(runs[name])}")
    b = runs[names[1]]
    overhead = 1 - statistics.median(x["rate"] / a["rate"] for x, a in zip(b, ref))
    print(f"\none actor against in process: {overhead:+.1%} overhead (goal under 10%)")
    for d, c in zip(runs[names[3]], runs[names[2]]):
        print(f"kill: {d['generated']}/{d['items']} generated, {d['lost']} lost, {d['duplicated']} stored twice; "
              f"{len(d['failures'])} failure(s), {sum(f['units_requeued'] for f in d['failures'])} unit(s) "
              f"re-queued; {d['seconds'] - c['seconds']:+.1f} s against C ({d['seconds']:.1f} s vs {c['seconds']:.1f} s)")
    ray_executor.close_pools()


if __name__ == "__main__":
    main()
