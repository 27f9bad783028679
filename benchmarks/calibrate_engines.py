"""Noise profiles of three real noise sources, and what calibration changes (docs/gate.md, 'Calibration').

    python benchmarks/calibrate_engines.py [--repeats 12] [--limit 6] [--sources llamacpp,vllm,hf] [--out DIR]

Runs `evalrun calibrate` on each source's baseline config as a team would: the llama.cpp server
(configs/engines/llamacpp-f16.yaml, f16 KV, launched and restarted for every repeat), vLLM's CPU build
(configs/engines/vllm-auto.yaml, bf16, restarted; `vllm-batched`: the same with 4 requests in flight, so the
engine batches them) and the hf runner in bfloat16 (configs/noisy-bf16.yaml, other
batches for every repeat), each on the first `--limit` items of its two packs. Prints per source the A/A flip
rate, the unstable fields, the default gate's false-FAIL rate over the A/A pairs with the profile (the other
repeats as replicates) and without it (one run against one), each with its Clopper-Pearson interval, and the
power measured with planted one-digit faults at the rate each pack's verdict states against the stated 95%.
Stored runs are reused: a second call only re-measures. Exits 1 when a source could not be calibrated.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {
    "llamacpp": ("configs/engines/llamacpp-f16.yaml", ".engines/llamacpp/.installed"),
    "vllm": ("configs/engines/vllm-auto.yaml", ".engines/vllm/.installed"),
    "vllm-batched": ("benchmarks/calibrate/vllm-auto-batched.yaml", ".engines/vllm/.installed"),
    "hf": ("configs/noisy-bf16.yaml", None),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=12)
    ap.add_argument("--limit", type=int, default=6, help="items of each pack (two packs per config)")
    ap.add_argument("--plants", type=int, default=3)
    ap.add_argument("--sources", default="llamacpp,vllm,hf", help=f"of {', '.join(SOURCES)}")
    ap.add_argument("--out", type=Path, default=ROOT / "runs-calibrate")
    args = ap.parse_args(argv)
    evalrun = Path(sys.executable).with_name("evalrun")
    code, rows = 0, []
    for name in args.sources.split(","):
        config, needs = SOURCES[name]
        if needs and not (ROOT / needs).exists():
            print(f"{name}: skipped ({needs} missing: make engines)")
            code = 1
            continue
        started = time.perf_counter()
        profile_json = args.out / f"{name}-profile.json"
        args.out.mkdir(parents=True, exist_ok=True)
        res = subprocess.run([str(evalrun), "calibrate", config, "--repeats", str(args.repeats), "--limit",
                              str(args.limit), "--plants", str(args.plants), "--out", str(args.out / name),
                              "--json", str(profile_json)], cwd=ROOT, stdout=subprocess.PIPE, text=True)  # progress on stderr
        seconds = time.perf_counter() - started
        if res.returncode != 0:
            print(f"{name}: calibrate exited {res.returncode}\n{res.stdout[-2000:]}")
            code = 1
            continue
        print(res.stdout)
        rows.append((name, config, seconds, json.loads(profile_json.read_text())))
    print(f"\n{'source':<9} {'runs':>4} {'items':>5} {'A/A flips':>16} {'unstable':>9} {'false FAIL w/ profile':>26} "
          f"{'w/o profile':>24} {'power (stated .95)':>34} {'time':>7}")
    for name, config, seconds, p in rows:
        k = sum(s["flips"]["k"] for s in p["scopes"])
        n = sum(s["flips"]["n"] for s in p["scopes"])
        power = "; ".join(f"{m['pack'][:6]} {m['detected']['k']}/{m['detected']['n']} at {100 * m['rate']:.0f}%"
                          for m in p["power"]) or "none"
        print(f"{name:<9} {len(p['runs']):>4} {p['items']:>5} {f'{k}/{n} ({k / max(n, 1):.2%})':>16} "
              f"{len(p['unstable']):>4}/{p['fields']:<4} {_share(p['with_profile']['false_fail']):>26} "
              f"{_share(p['without_profile']['false_fail']):>24} {power:>34} {seconds:>6.0f}s")
    return code


def _share(s: dict) -> str:
    return f"{s['k']}/{s['n']} ({100 * s['low']:.1f}-{100 * s['high']:.1f}%)"


if __name__ == "__main__":
    raise SystemExit(main())
