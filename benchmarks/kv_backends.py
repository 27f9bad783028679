"""Quantized-KV backends on the demo packs: quanto, hqq and fp8 against one shared baseline.

    python benchmarks/kv_backends.py [--out runs] [--limit N] [--json kv_backends.json] [--timing-batches 4]

Runs one `evalrun compare configs/baseline.yaml <candidates> --no-early-stop`
(the baseline generated once and shared; every item of every candidate, so the
flip counts are complete), each candidate re-timed against the baseline with
both models in one process, A B then B A (`timing: interleaved`, which changes
no output and no run key, so stored runs are reused). Then prints one table:
per candidate, the harmful flips and accuracy delta on each pack, the KV bytes
ratio its cache really held (from the run manifest's effects) and the TTFT,
TPOT and E2EL p50 speedups (baseline / candidate, above 1 is faster). The
comparison's exit status (1 when a candidate fails the gate) is not this
script's: it exits 0 once the table is printed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalrun.evals.config import load_config  # noqa: E402
from evalrun.evals.run import prepare  # noqa: E402

CANDIDATES = ("int4kv-quanto.yaml", "int2kv-quanto.yaml", "int4kv.yaml", "int2kv.yaml", "fp8kv.yaml")  # quanto (the extra), hqq, fp8
PACKS = ("needle_numbers", "doc_fields")
SPEEDUPS = ("ttft_p50", "tpot_p50", "e2el_p50")


def timed_variant(config: Path, folder: Path, batches: int) -> Path:
    """The candidate as it is, re-timed interleaved against the baseline (its name and key unchanged)."""
    path = folder / config.name
    path.write_text(f"extends: {config.resolve()}\ntiming: interleaved\ntiming_batches: {batches}\n", encoding="utf-8")
    return path


def compare(cands: list[Path], out: Path, json_path: Path, limit: int | None) -> dict[str, Any]:
    cli = Path(sys.executable).with_name("evalrun")
    cmd = [str(cli), "compare", str(ROOT / "configs/baseline.yaml"), *map(str, cands),
           "--no-early-stop", "--out", str(out), "--json", str(json_path)]
    if limit:
        cmd += ["--limit", str(limit)]
    done = subprocess.run(cmd, cwd=ROOT)
    if done.returncode not in (0, 1):
        raise SystemExit(f"evalrun compare exited {done.returncode}")
    return json.loads(json_path.read_text(encoding="utf-8"))


def kv_effects(config: Path, out: Path, limit: int | None) -> dict[str, Any]:
    """The candidate's kv_cache effects, from the manifest of the run its config keys to."""
    run_dir = prepare(load_config(config), out, limit=limit).dir
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text(encoding="utf-8"))
    return (manifest.get("effects") or {}).get("kv_cache") or {}


def rows(report: dict[str, Any], cands: list[Path], out: Path, limit: int | None) -> list[list[str]]:
    speed = {r["run"]: r for r in report["speed"]["rows"] if r["role"] != "baseline"}
    table = []
    for comp, config in zip(report["comparisons"], cands):
        packs = {p["pack"]: p for p in comp["packs"]}
        run = comp["candidate"]
        eff = kv_effects(config, out, limit)
        cells = [run, str(eff.get("backend")), str(eff.get("quant"))]
        for name in PACKS:
            p = packs.get(name) or {}
            cells.append(f"{p.get('harmful_items', '-')} ({p.get('delta_points', 0):+.1f} pt)" if p else "-")
        cells.append(f"{eff['kv_bytes_ratio']:.3f}" if eff.get("kv_bytes_ratio") is not None else "-")
        ups = speed[run].get("speedups") or {}
        cells += [f"{ups[m]['value']:.2f}x" if m in ups else "-" for m in SPEEDUPS]
        table.append(cells)
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runs", help="run store (stored runs are reused)")
    ap.add_argument("--json", type=Path, default=None, help="keep the comparison's JSON here")
    ap.add_argument("--limit", type=int, default=None, help="first N items of each pack (default: all 25)")
    ap.add_argument("--timing-batches", type=int, default=4, help="batches re-timed per side, interleaved")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cands = [timed_variant(ROOT / "configs" / c, Path(tmp), args.timing_batches) for c in CANDIDATES]
        report = compare(cands, args.out, args.json or Path(tmp) / "compare.json", args.limit)
        body = rows(report, cands, args.out, args.limit)
    head = ["candidate", "backend", "quant", "needles harmful (delta)", "doc_fields harmful (delta)",
            "KV bytes ratio", "TTFT", "TPOT", "E2EL"]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    for r in [head, ["-" * w for w in widths], *body]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    print("harmful: items the baseline had right and the candidate lost; speedups: baseline / candidate p50, "
          "interleaved re-timing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
