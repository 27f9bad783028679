"""Drift rules (evals/gate/_drift_rules.py says what each rule says) decided on a candidate's teacher-forced
drift, each on its bootstrap interval over items, never on the point estimate."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from evalrun.evals.drift._drift import Drift, TokenDrift, mean_interval
from evalrun.evals.gate import ALL_PACKS, DriftRule, RuleResult

N_RESAMPLES = 2000


def _statistic(rule: DriftRule) -> tuple[Callable[[list[TokenDrift]], float], str]:
    """The rule's figure over a list of items' records, and what it is, in words."""
    if rule.kind == "max_kl":
        if rule.bound.on == "mean":
            return (lambda rows: float(np.mean([r.kl.mean() for r in rows])),
                    "mean KL (mean over items of each item's per-token mean)")
        return (lambda rows: float(np.percentile(np.concatenate([r.kl for r in rows]), 99.0)),
                "p99 KL (99th percentile of the per-token KL, all the scope's tokens)")
    if rule.bound.on == "mean":
        return (lambda rows: float(np.mean([r.same_top1.mean() for r in rows])),
                "same-top-1 share (mean over items)")
    return (lambda rows: float(np.percentile([r.same_top1.mean() for r in rows], 1.0)),
            "same-top-1 share that 99% of items reach (1st percentile over items)")


def interval(rows: list[TokenDrift], stat: Callable[[list[TokenDrift]], float],
             confidence: float, rule: DriftRule | None = None) -> tuple[float, float, float]:
    """(value, low, high): a mean rule's is the drift table's interval of the same figure (mean_interval);
    a p99 rule's, which no table computes, the percentile bootstrap over items (scipy.stats.bootstrap, seeded)."""
    if rule is not None and rule.bound.on == "mean":
        per_item = [float((r.kl if rule.kind == "max_kl" else r.same_top1).mean()) for r in rows]
        fig = mean_interval(per_item, confidence)
        return fig.value, fig.low, fig.high
    from scipy import stats as _sps  # lazy: importing scipy.stats takes ~1 s

    value = stat(rows)
    idx = np.arange(len(rows))
    res = _sps.bootstrap((idx,), lambda i: stat([rows[int(j)] for j in i]), vectorized=False, paired=False,
                         confidence_level=confidence, n_resamples=N_RESAMPLES, method="percentile",
                         random_state=np.random.default_rng(0))
    return value, float(res.confidence_interval.low), float(res.confidence_interval.high)


def _where(gate: Any, i: int, rule: DriftRule) -> str:
    return f"{gate._file}: {gate.where(f'drift[{i}].{rule.kind}')}"


def _one(gate: Any, i: int, rule: DriftRule, cand: str, drift: Drift | None, why_none: str | None,
         packs: dict[str, str]) -> RuleResult:
    b = rule.bound
    pack = b.pack or ALL_PACKS
    stat, what = _statistic(rule)
    limit = b.value
    if drift is None:
        reason = why_none or "drift not measured (compare --drift teacher-forces each candidate)"
        return RuleResult(cand, pack, rule.name(), float("nan"), limit, False,
                          f"{_where(gate, i, rule)}: {reason}; this rule cannot be vouched for", "gate",
                          evaluated=False)
    rows = [r for k, r in drift.per_item.items() if r.kl.size and (b.pack is None or packs.get(k) == b.pack)]
    if len(rows) < 2:
        return RuleResult(cand, pack, rule.name(), stat(rows) if rows else float("nan"), limit, False,
                          f"{what}: {len(rows)} item(s) with teacher-forced records; an interval needs at least 2",
                          "gate", evaluated=bool(rows), on_fail="incomplete", items_needed=2)
    value, low, high = interval(rows, stat, gate.confidence, rule)
    text = f"{what}: {value:.4g} [{low:.4g}, {high:.4g}] over {len(rows)} items ({gate.confidence:.0%} bootstrap)"
    if rule.kind == "max_kl":
        passed, failed = high <= limit, low > limit
    else:
        passed, failed = low >= limit, high < limit
    if passed:
        verdict = "the whole interval is within the limit"
    elif failed:
        verdict = "the whole interval is beyond the limit"
    else:
        verdict = f"inconclusive: the interval straddles {limit:g} (more items narrow it)"
    out = RuleResult(cand, pack, rule.name(), float(f"{value:.4g}"), limit, passed, f"{text}; {verdict}", "gate",
                     on_fail="fail" if failed else "incomplete")
    unscored = [(k, why) for k, why in drift.unscored.items() if b.pack is None or packs.get(k) == b.pack]
    if unscored:  # figures over a part of the scope vouch for nothing about the rest (an unread item, a NaN)
        k, why = unscored[0]
        _undecided(out, f"{_where(gate, i, rule)}: {len(unscored)} paired item(s) in scope not measured "
                        f"(first: item {k}: {why})")
    return out


def _undecided(result: RuleResult, why: str) -> None:
    if result.evaluated and result.status in ("pass", "fail"):
        result.evaluated = False
        result.detail += f"; not decided: {why}"


def evaluate_drift(gate: Any, cand: str, drift: Drift | None, why_none: str | None, packs: dict[str, str],
                   stopped: bool = False) -> list[RuleResult]:
    """Each drift rule of `gate` (a GateConfig) on the candidate's drift; `packs`: item id -> pack."""
    out = [_one(gate, i, rule, cand, drift, why_none, packs) for i, rule in enumerate(gate.drift)]
    if stopped:
        for r in out:
            _undecided(r, "the candidate stopped early")
    return out


__all__ = ["evaluate_drift", "interval"]
