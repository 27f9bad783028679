"""A/A comparisons in a noisy setting: how often the gate fails a candidate that is the baseline itself.

    python benchmarks/aa_noise.py [--config configs/noisy-bf16.yaml] [--replicates 3] [--comparisons 20]

Generates the baseline `--replicates` times (each replicate in other batches), then
the same configuration `--comparisons` more times, each in yet other batches, and
gates every repeat against the baseline twice on the same stored runs: with the
gate of a single baseline run (every flip counts) and with the noise-aware gate
(flips counted only on fields stable across the replicates, tested against their
A/A rate). A repeat has no regression by construction, so every FAIL is a false
alarm. Stored runs are reused, so a second call only re-gates. Prints one line per
comparison and the totals; exits 1 when the noise-aware gate fails any of them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals import api  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/noisy-bf16.yaml")
    ap.add_argument("--replicates", type=int, default=3, help="baseline runs in all (the noise-aware gate's)")
    ap.add_argument("--comparisons", type=int, default=20, help="A/A repeats to gate")
    ap.add_argument("--confirm", type=int, default=0, help="re-asks per flipped item in the noise-aware gate")
    ap.add_argument("--out", default="runs")
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args(argv)

    cfg = api.load(args.config)
    aware = api.compare(cfg, [cfg] * args.comparisons, out=args.out, limit=args.limit, log=lambda m: None,
                        replicates=args.replicates, early_stop=False, confirm_n=args.confirm or None)
    naive = api.compare_results(aware.baseline, [(c.run, None) for c in aware.candidates])
    print(f"{'repeat':<28} {'identical':>10} {'flips':>6} {'gated':>6}  {'single-run gate':<16} noise-aware gate")
    failed_naive = failed_aware = 0
    flips = right = identical = items = 0
    for comp_n, v_n, comp_a, v_a, run in zip(naive.comparisons, naive.verdicts, aware.comparisons,
                                             aware.verdicts, [c.run for c in aware.candidates]):
        same = sum(pc.identical_outputs for pc in comp_n.packs)
        n = sum(pc.n for pc in comp_n.packs)
        raw = len(comp_n.harmful)
        gated = raw - len(v_a.noise_flips) - len(v_a.unconfirmed)
        failed_naive += v_n.status == "fail"
        failed_aware += v_a.status == "fail"
        flips += raw
        right += sum(len(pc.right_fields) for pc in comp_n.packs)
        identical, items = identical + same, items + n
        why = "; ".join(f"{r.pack} {r.rule}" for r in v_n.failed)
        print(f"{run.dir.name:<28} {same:>5}/{n:<4} {raw:>6} {gated:>6}  {v_n.status.upper():<16} "
              f"{v_a.status.upper()}{'  (single-run fails: ' + why + ')' if why else ''}")
    stab = aware.stability
    print()
    print(f"setting: {args.config} ({cfg.dtype}, batch {cfg.batch_size}), {args.replicates} baseline replicates")
    print(f"A/A: {identical}/{items} outputs identical ({100 * identical / items:.1f}%); harmful field flips "
          f"{flips} of {right} fields right at baseline ({100 * flips / right:.2f}%)")
    print(stab.summary() if stab else "no stability")
    print(f"single-run gate (every flip counts): {failed_naive}/{len(aware.verdicts)} A/A comparisons FAIL")
    print(f"noise-aware gate:                    {failed_aware}/{len(aware.verdicts)} A/A comparisons FAIL")
    return 1 if failed_aware else 0


if __name__ == "__main__":
    raise SystemExit(main())
