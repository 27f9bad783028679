"""Calibration of the gate's power: inject harmful flips at a known rate into a stored
baseline and count how often the gate fails, against the power its verdict predicts.

    python benchmarks/gate_power.py RUN_DIR [--rates 0.005,0.01,0.02] [--seeds 20] [--gate gate.yaml]

For each seed and rate r, a synthetic candidate is the baseline's own stored outputs
with one digit of the answer changed in each gated field (a field the default
rules watch, right at baseline and, with replicates stored beside the run, stable
across them) independently with probability r: the change a KV-cache fault makes
(CHF 1451.53 -> CHF 1457.53). The changed output is scored again like any answer;
no outcome is edited. The candidate is paired with the baseline and gated with the
gate the verdict would use (replicates included), so its A/A rate is the
baseline's own. The predicted power is the verdict's: 1 - prod over the flip rules
of (1 - power), each exact for its test (1 - (1 - r)^n for a zero-flip rule on n
fields). Prints, per rate: seeds the gate failed (any rule), seeds a harmful-flip rule
failed, the measured detection rate (by the flip rules, what the power is about) and the
predicted power. The synthetic candidate carries no noise of its own, while the prediction
assumes it flips at the A/A rate too, so with replicates the prediction is conservative.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals.api import score, stored_replicates  # noqa: E402
from evalrun.evals.gate import GateConfig, evaluate, load_gate_file  # noqa: E402
from evalrun.evals.gate import rule_key  # noqa: E402
from evalrun.evals.compare import pair  # noqa: E402
from evalrun.evals.stats import pack_power  # noqa: E402
from evalrun.evals.results import RunResult  # noqa: E402
from evalrun.evals.scoring import ScoredItem, score_item  # noqa: E402
from evalrun.evals.scoring import Stability, stability  # noqa: E402
from evalrun.runners.fault import change_digit  # noqa: E402


def gated_fields(base: list[ScoredItem], gate: GateConfig, stab: Stability) -> list[tuple[str, str]]:
    """(item, field) pairs a flip rule counts a flip on."""
    limits = gate.flip_limits()
    names: dict[str, set[str]] = {}
    for s in base:
        names.setdefault(s.pack, set()).update(s.fields)
    out = []
    for s in base:
        for name in s.fields:
            if stab.gated(s.item_id, name) and rule_key(name, s.kinds[name], limits, names[s.pack]):
                out.append((s.item_id, name))
    return out


def synthetic(run: RunResult, base: list[ScoredItem], targets: list[tuple[str, str]], rate: float,
              rng: random.Random) -> tuple[list[ScoredItem], int]:
    """The baseline's scored items with digits changed in a share `rate` of `targets`; returns the
    candidate and how many of the changes turned a right field wrong."""
    items = {it.id: it for it in run.items}
    out = {s.item_id: s for s in base}
    texts: dict[str, str] = {}
    flipped = 0
    for item_id, name in targets:
        if rng.random() >= rate:
            continue
        gen = run.generations[item_id]
        gold = next(f.gold for f in items[item_id].fields if f.name == name)
        changed = change_digit(texts.get(item_id, gen.output or ""), gold, rng)
        if changed is None:
            continue
        texts[item_id] = changed
        scored = score_item(items[item_id], gen.model_copy(update={"output": changed, "output_ids": None}))
        out[item_id] = scored
        flipped += not scored.field_right(name)
    return [out[s.item_id] for s in base], flipped


def predicted(base: list[ScoredItem], gate: GateConfig, stab: Stability, rate: float) -> float:
    """The verdict's own power at `rate`: its flip rules over every pack."""
    verdict = evaluate(pair(base, base, "baseline", "a", n_resamples=1), gate, stab=stab)
    miss = 1.0
    for pw in verdict.power.values():
        miss *= 1.0 - pack_power(pw.scopes, rate)
    return 1.0 - miss


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--rates", default="0.005,0.01,0.02")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--gate", type=Path, default=None)
    ap.add_argument("--no-replicates", action="store_true", help="ignore replicates stored beside the run")
    args = ap.parse_args(argv)

    run = RunResult.load(args.run_dir)
    gate = load_gate_file(args.gate) if args.gate else GateConfig()
    base = score(run)
    reps = [] if args.no_replicates else stored_replicates(run, log=lambda m: None)
    stab = stability([base, *(score(r) for r in reps)])
    targets = gated_fields(base, gate, stab)
    print(f"baseline {run.dir.name}: {len(base)} items, {len(targets)} gated fields; {stab.summary()}")
    print(f"{'rate':>7} {'seeds':>6} {'gate failed':>12} {'by flip rules':>14} {'measured':>9} {'predicted':>10} "
          f"{'flips/seed':>11}")
    code = 0
    for rate in (float(r) for r in args.rates.split(",")):
        failed = by_flips = flipped = 0
        for seed in range(args.seeds):
            rng = random.Random(f"gate_power:{seed}:{rate}")
            cand, k = synthetic(run, base, targets, rate, rng)
            flipped += k
            verdict = evaluate(pair(base, cand, "baseline", "synthetic", n_resamples=200), gate, stab=stab)
            failed += verdict.status == "fail"
            by_flips += any(r.rule.startswith("max_harmful_flips") for r in verdict.failed)
        pred = predicted(base, gate, stab, rate)
        measured = by_flips / args.seeds
        print(f"{rate:>7.3%} {args.seeds:>6} {failed:>12} {by_flips:>14} {measured:>9.1%} {pred:>10.1%} "
              f"{flipped / args.seeds:>11.2f}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
