"""Teacher-forced drift for every lever on the demo packs, side by side: the table, the AUC of an item's max
KL for its harmful flips, the items drift and flips need to see int4kv, and what forcing costs (issue 30).

    python benchmarks/drift_levers.py --limit 4 --orderings 200

Each lever is compared with the baseline through the library (`evals.api.compare(..., drift=True)`), one
lever at a time so that a lever finished is kept: stored runs and forced records under --out are reused,
so a run that was stopped resumes where it was. The noisy-bf16 A/A (the bf16 baseline against a replicate
of itself in other batches, `--replicates 2`) gives the floor drift must clear. Forcing seconds are only
known when records are forced, so they are kept in `<out>/drift-levers-forcing.json`, added up per run.

Prints everything in one go and writes the figures as JSON (--json).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from scipy.stats import rankdata

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals import api  # noqa: E402
from evalrun.evals.compare import Comparison, pair  # noqa: E402
from evalrun.evals.drift import Drift, Figure, mean_interval  # noqa: E402
from evalrun.evals.gate import GateConfig, evaluate  # noqa: E402
from evalrun.evals.scoring import ScoredItem  # noqa: E402
from evalrun.evals.store import dists as dists_store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LEVERS = ["int4kv", "int2kv", "fp8kv", "evict-snapkv", "sparse50", "specdec-pld", "specdec-draft"]
AA_CONFIG = "noisy-bf16"
FORCING = "drift-levers-forcing.json"


# ---- the figures' helpers (tests/benchmarks/test_drift_levers.py) ----

def auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """P(score of a positive > score of a negative) + P(tie) / 2: the Mann-Whitney U over n1 * n0 from mid-ranks.
    None when one class is empty (no AUC to speak of)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    n1, n0 = int(y.sum()), int((~y).sum())
    if n1 == 0 or n0 == 0:
        return None
    ranks = rankdata(s)  # ties share their mean rank: a tie counts one half
    return float((ranks[y].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def first_detection(order: Sequence[str], detects: Callable[[list[str]], bool], start: int = 2) -> int | None:
    """The smallest n >= start at which `detects` holds on the first n items of `order` (None: not on all of them)."""
    for n in range(start, len(order) + 1):
        if detects(list(order[:n])):
            return n
    return None


def drift_detects(cand_kl: dict[str, float], floor_kl: dict[str, float], confidence: float = 0.95
                  ) -> Callable[[list[str]], bool]:
    """On a prefix of items: the lower end of the candidate's mean-KL interval above the upper end of the A/A
    floor's on the same items (each the drift table's own interval, evals.drift.mean_interval)."""
    def detects(ids: list[str]) -> bool:
        cand = mean_interval([cand_kl[i] for i in ids], confidence)
        floor = mean_interval([floor_kl[i] for i in ids], confidence)
        return cand.low > floor.high
    return detects


def flips_fail(base: list[ScoredItem], cand: list[ScoredItem], gate: GateConfig, name: str = "candidate"
               ) -> Callable[[list[str]], bool]:
    """On a prefix of items: the gate's verdict (evals.gate.evaluate on evals.compare.pair of those items, no
    replicates: every field right at baseline gated, as `compare` without --replicates) is FAIL."""
    b = {s.item_id: s for s in base}
    c = {s.item_id: s for s in cand}

    def detects(ids: list[str]) -> bool:
        comparison = pair([b[i] for i in ids], [c[i] for i in ids], "baseline", name, confidence=gate.confidence)
        return evaluate(comparison, gate, []).status == "fail"
    return detects


def detection_counts(ids: Sequence[str], detects: Callable[[list[str]], bool], orderings: int, seed: int
                     ) -> list[int | None]:
    """`first_detection` over `orderings` seeded random orders of `ids`."""
    rng = np.random.default_rng(seed)
    return [first_detection([ids[j] for j in rng.permutation(len(ids))], detects) for _ in range(orderings)]


def median_count(counts: Sequence[int | None], total: int) -> str:
    """The median of counts where an ordering that never detects counts as beyond all the items."""
    if not counts:
        return "-"
    x = np.sort(np.asarray([c if c is not None else total + 1 for c in counts], dtype=float))
    m = float(np.median(x))
    return f">{total}" if m > total else f"{m:g}"


# ---- running the levers ----

@dataclass
class Lever:
    name: str
    drift: Drift | None
    comparison: Comparison | None
    base_scored: list[ScoredItem] = field(default_factory=list)
    cand_scored: list[ScoredItem] = field(default_factory=list)
    forcing_s: float | None = None
    store_bytes: int = 0
    note: str = ""
    base_dir: Path | None = None


def _config(name: str) -> Any:
    return api.load(ROOT / "configs" / f"{name}.yaml")


def _forcing(out: Path) -> dict[str, float]:
    path = out / FORCING
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _add_forcing(out: Path, run_dir: Path, seconds: float | None) -> float | None:
    """Adds this session's forcing seconds to the run's stored total; the total (None: never timed here)."""
    known = _forcing(out)
    if seconds:
        known[run_dir.name] = known.get(run_dir.name, 0.0) + seconds
        (out / FORCING).write_text(json.dumps(known, indent=1), encoding="utf-8")
    return known.get(run_dir.name)


def _store_bytes(run_dir: Path, baseline_key: str) -> int:
    name = dists_store.forced_name(baseline_key)
    return sum(p.stat().st_size for p in run_dir.glob(f"{name}.*"))


def run_lever(baseline: str, lever: str, out: Path, limit: int | None, replicates: int = 1,
              log: Callable[[str], None] = print) -> Lever:
    """One compare --drift of `lever` against `baseline` (the A/A when `lever` is None-like: replicates 2)."""
    base_cfg = _config(baseline)
    aa = lever == baseline
    report = api.compare(base_cfg, [] if aa else [_config(lever)], out=out, limit=limit, log=log,
                         replicates=replicates, early_stop=False, drift=True)
    pair = report.noise_floor if aa else report.candidates[0]
    if pair is None:
        return Lever(lever, None, None, note="no replicate ran")
    run, comparison = pair.run, pair.comparison
    found = report.drift.get(run.name)
    key = report.baseline.manifest.key or report.baseline.dir.name
    seconds = found.seconds if found is not None else None
    return Lever(lever, found, comparison, report.scored[report.baseline.name] if not aa else api.score(report.baseline),
                 api.score(run) if aa else report.scored[run.name], _add_forcing(out, run.dir, seconds),
                 _store_bytes(run.dir, key), note=report.drift_note or "", base_dir=report.baseline.dir)


def baseline_store(levers: list[Lever]) -> dict[str, Any] | None:
    """The fp32 baseline's own stored distributions (dists.bin + its index): bytes per 1,000 answer tokens."""
    run = next((lv.base_dir for lv in levers if lv.base_dir is not None), None)
    if run is None or not (run / "dists.jsonl").is_file():
        return None
    lines = [json.loads(x) for x in (run / "dists.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    tokens = sum(int(x.get("n", 0)) for x in lines)
    size = (run / "dists.bin").stat().st_size + (run / "dists.jsonl").stat().st_size
    return {"run": run.name, "bytes": size, "tokens": tokens,
            "bytes_per_1k_tokens": 1000 * size / tokens if tokens else None}


def _fig(f: Figure) -> str:
    return f"{f.value:.3g} [{f.low:.3g}, {f.high:.3g}]"


def lever_row(lv: Lever) -> dict[str, Any]:
    """The table's figures for one lever (JSON-ready)."""
    d, o = lv.drift, lv.drift.overall if lv.drift else None
    if d is None or o is None:
        return {"lever": lv.name, "note": lv.note or "no drift measured"}
    gen = d.generation_seconds
    return {
        "lever": lv.name, "items": o.items, "tokens": o.tokens,
        "mean_kl": [o.mean_kl.value, o.mean_kl.low, o.mean_kl.high], "p99_kl": o.p99_kl, "max_kl": o.max_kl,
        "same_top1": o.same_top1.value, "mean_dp": o.mean_dp.value,
        "harmful_flips": len(lv.comparison.harmful) if lv.comparison else None,
        "flip_notes": [n.text for n in d.flips],
        "forcing_s": lv.forcing_s, "generation_s": gen,
        "forcing_share": (lv.forcing_s / gen) if lv.forcing_s and gen else None,
        "store_bytes": lv.store_bytes, "bytes_per_1k_tokens": 1000 * lv.store_bytes / o.tokens if o.tokens else None,
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'lever':<16} {'items':>5} {'tokens':>6} {'mean KL [95% CI]':<32} {'p99 KL':>8} {'max KL':>8} "
          f"{'top-1':>6} {'flips':>5} {'forcing s':>9} {'gen s':>7} {'share':>6} {'B/1k tok':>9}")
    for r in rows:
        if "mean_kl" not in r:
            print(f"{r['lever']:<16} {r['note']}")
            continue
        share = f"{r['forcing_share']:.0%}" if r["forcing_share"] is not None else "-"
        forcing = f"{r['forcing_s']:.1f}" if r["forcing_s"] is not None else "-"
        kl = _fig(Figure(*r["mean_kl"]))
        print(f"{r['lever']:<16} {r['items']:>5} {r['tokens']:>6} {kl:<32} {r['p99_kl']:>8.3g} {r['max_kl']:>8.3g} "
              f"{r['same_top1']:>6.1%} {r['harmful_flips']:>5} {forcing:>9} {r['generation_s'] or 0:>7.1f} "
              f"{share:>6} {r['bytes_per_1k_tokens'] or 0:>9.0f}")


def item_rows(levers: list[Lever]) -> list[tuple[str, str, float, bool]]:
    """(lever, item, the candidate's max per-token KL, the item has a harmful flip) for each measured item."""
    out = []
    for lv in levers:
        if lv.drift is None or lv.comparison is None:
            continue
        flipped = {f.item_id for f in lv.comparison.harmful}
        out += [(lv.name, i, float(t.kl.max()), i in flipped) for i, t in lv.drift.per_item.items() if t.kl.size]
    return out


def predictive(levers: list[Lever]) -> dict[str, Any]:
    rows = item_rows(levers)
    result: dict[str, Any] = {"pooled": {"items": len(rows), "flipped": sum(r[3] for r in rows),
                                         "auc": auc([r[2] for r in rows], [r[3] for r in rows])}}
    for lv in levers:
        mine = [r for r in rows if r[0] == lv.name]
        result[lv.name] = {"items": len(mine), "flipped": sum(r[3] for r in mine),
                           "auc": auc([r[2] for r in mine], [r[3] for r in mine])}
    return result


def power(lever: Lever, floor: Lever, orderings: int, seed: int) -> dict[str, Any]:
    """Items needed, over seeded orderings, for drift to clear the A/A floor and for the flip gate to FAIL."""
    if lever.drift is None or floor.drift is None:
        return {"note": "drift not measured for the lever or the A/A"}
    cand = {i: float(t.kl.mean()) for i, t in lever.drift.per_item.items() if t.kl.size}
    aa = {i: float(t.kl.mean()) for i, t in floor.drift.per_item.items() if t.kl.size}
    scored = {s.item_id for s in lever.cand_scored}
    ids = sorted(set(cand) & set(aa) & scored)
    drift_n = detection_counts(ids, drift_detects(cand, aa), orderings, seed)
    flip_n = detection_counts(ids, flips_fail(lever.base_scored, lever.cand_scored, GateConfig(), lever.name),
                              orderings, seed)
    return {"items": len(ids), "orderings": orderings, "seed": seed,
            "drift_median": median_count(drift_n, len(ids)), "flips_median": median_count(flip_n, len(ids)),
            "drift_never": sum(c is None for c in drift_n), "flips_never": sum(c is None for c in flip_n),
            "drift_counts": drift_n, "flip_counts": flip_n}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levers", nargs="+", default=LEVERS,
                    help="config names under configs/, each with its own item limit per pack as NAME:N")
    ap.add_argument("--limit", type=int, default=None, help="only the first N items of each pack")
    ap.add_argument("--out", default="runs/drift-levers")
    ap.add_argument("--orderings", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="where to write the figures (default: <out>/drift-levers.json)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines from the runs")
    args = ap.parse_args(argv)
    out = Path(args.out)
    log: Callable[[str], None] = (lambda _m: None) if args.quiet else (lambda m: print(m, file=sys.stderr))
    floor = run_lever(AA_CONFIG, AA_CONFIG, out, args.limit, replicates=2, log=log)
    floor.name = "noisy-bf16 A/A"
    levers = []
    for spec in args.levers:
        name, _, own = spec.partition(":")
        levers.append(run_lever("baseline", name, out, int(own) if own else args.limit, log=log))
    rows = [lever_row(lv) for lv in [*levers, floor]]
    print(f"drift by lever, limit {args.limit or 'none'} per pack unless the lever names its own (share: "
          f"teacher-forced scoring / the candidate's generation time; B/1k tok: its forced records' bytes per "
          f"1,000 answer tokens)")
    print_table(rows)
    base_store = baseline_store(levers)
    if base_store:
        print(f"baseline's stored distributions (dists.bin + dists.jsonl): {base_store['bytes']} bytes for "
              f"{base_store['tokens']} tokens, {base_store['bytes_per_1k_tokens']:.0f} bytes per 1,000 tokens")
    pred = predictive(levers)
    print("\nAUC of an item's max per-token KL for 'the item has a harmful flip':")
    for name, p in pred.items():
        a = f"{p['auc']:.3f}" if p["auc"] is not None else "- (one class only)"
        print(f"  {name:<16} items {p['items']:>4}  flipped {p['flipped']:>3}  AUC {a}")
    target = next((lv for lv in levers if lv.name == "int4kv"), None)
    pw = power(target, floor, args.orderings, args.seed) if target is not None else {"note": "int4kv not run"}
    print(f"\npower for int4kv over {args.orderings} orderings (seed {args.seed}) of {pw.get('items', 0)} items: "
          f"drift interval above the A/A floor's at a median of {pw.get('drift_median')} items "
          f"(never in {pw.get('drift_never')}), flip gate FAIL at {pw.get('flips_median')} "
          f"(never in {pw.get('flips_never')})" if "items" in pw else f"\npower: {pw['note']}")
    figures = {"limit": args.limit, "levers": rows, "baseline_store": base_store, "auc": pred,
               "power_int4kv": {k: v for k, v in pw.items() if not k.endswith("counts")}}
    path = Path(args.json) if args.json else out / "drift-levers.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    print(f"\nfigures: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
