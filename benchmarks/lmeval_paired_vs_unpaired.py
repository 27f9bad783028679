"""Two lm-eval runs judged two ways: lm-eval's own figures and its comparator's unpaired
z-test, against evalrun's paired comparison of the same sample logs (flips, McNemar,
the paired interval, the gate's verdict).

lm-eval's comparator (its scripts/model_comparator.py) tests
Z = (acc1 - acc2) / sqrt(se1^2 + se2^2): the two accuracies as if from independent
samples, although both runs answered the same docs. The paired view sees which docs
flipped and how many discordant pairs there are.

    python benchmarks/lmeval_paired_vs_unpaired.py [BASELINE_LOGS CANDIDATE_LOGS]

Default: the fp32 and bf16 logs of the default model in tests/data/lmeval.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

from scipy.stats import norm

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "lmeval"


def lm_eval_figures(folder: Path) -> dict[str, tuple[float, float]]:
    """(accuracy, stderr) per task and metric, as lm-eval's results file states them."""
    [path] = sorted(folder.rglob("results_*.json"))
    out = {}
    for task, res in json.loads(path.read_text())["results"].items():
        for key, value in res.items():
            metric, _, filt = key.partition(",")
            stderr = res.get(f"{metric}_stderr,{filt}")
            if isinstance(value, float) and "_stderr" not in metric and isinstance(stderr, float):
                out[f"{task} {key}"] = (value, stderr)
    return out


def unpaired_z(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """lm-eval's comparator: Z = (acc1 - acc2) / sqrt(se1^2 + se2^2), two-sided p."""
    z = (a[0] - b[0]) / math.sqrt(a[1] ** 2 + b[1] ** 2)
    return z, 2 * norm.sf(abs(z))


def main(base_logs: Path, cand_logs: Path) -> int:
    from evalrun.evals import api
    from evalrun.evals.imports import import_runs

    base_fig, cand_fig = lm_eval_figures(base_logs), lm_eval_figures(cand_logs)
    for key in base_fig:
        (a, sa), (b, sb) = base_fig[key], cand_fig[key]
        z, p = unpaired_z(base_fig[key], cand_fig[key])
        half = 1.96 * math.sqrt(sa ** 2 + sb ** 2)
        print(f"lm-eval {key}: baseline {a:.4f} +- {sa:.4f}, candidate {b:.4f} +- {sb:.4f}; its comparator's "
              f"unpaired z-test: Z = {z:+.2f}, p = {p:.3f}; unpaired 95% interval of the delta "
              f"[{100 * (b - a - half):+.1f}, {100 * (b - a + half):+.1f}] points")
    with tempfile.TemporaryDirectory() as tmp:
        [base] = import_runs("lm-eval", [base_logs], name="baseline", out=tmp, log=lambda m: None)
        [cand] = import_runs("lm-eval", [cand_logs], name="candidate", out=tmp, log=lambda m: None)
        report = api.report([base.dir, cand.dir], log=lambda m: None)
    for pc in report.comparisons[0].packs:
        st = pc.stats.paired if pc.stats else None
        ci = f"[{100 * st.interval.low:+.1f}, {100 * st.interval.high:+.1f}]" if st else "-"
        print(f"evalrun paired {pc.pack}: {pc.n} docs paired; baseline {pc.baseline_accuracy:.4f}, candidate "
              f"{pc.candidate_accuracy:.4f}; flips: {len(pc.harmful)} right -> wrong, {len(pc.helpful)} wrong -> "
              f"right; identical answers {pc.identical_outputs}/{pc.n}; McNemar exact p = "
              f"{st.p_value if st else float('nan'):.3f}; delta {pc.delta_points:+.1f} points, 95% "
              f"paired CI {ci}")
    verdict = report.verdicts[0]
    print(f"evalrun gate (default rules): {verdict.status.upper()}, exit {report.exit_code}")
    for rule in verdict.rules:
        print(f"  {rule.status.upper():4} {rule.pack} {rule.rule}: measured {rule.measured}, threshold {rule.threshold}")
    return report.exit_code


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:3]] or [DATA / "float32", DATA / "bfloat16"]
    main(*args)
