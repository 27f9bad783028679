"""Drift rules in the gate (issue 30, item 5): a candidate that moves the baseline's distribution too far.

    gate:
      drift:
        - max_kl: {mean: 0.05}                      # mean over items of each item's mean KL, every pack
        - max_kl: {p99: 0.5, pack: needle_numbers}  # the 99th percentile of the pack's per-token KL
        - min_top1_agreement: {mean: 0.95}          # mean over items of each item's same-top-1 share
        - min_top1_agreement: {p99: 0.8}            # the agreement 99% of items reach (their 1st percentile)

The drift figures (evals/drift.py) are always reported when measured; these rules only gate when the
gate names them. Each is decided on its bootstrap interval over items at the gate's confidence, never
on the point estimate: it fails only when the whole interval is beyond the limit, passes only when the
whole interval is within it, and otherwise is inconclusive (incomplete, exit 4). A rule whose drift was
not measured (no `--drift`, no logprobs stored with the baseline, a runner that cannot teacher-force)
cannot be vouched for: incomplete, with one line naming the gate file and key.
"""

from __future__ import annotations

from typing import Any, Callable, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator
from scipy import stats as _sps

from evalrun.evals.drift import Drift, TokenDrift
from evalrun.evals.verdict import ALL_PACKS, RuleResult

Kind = Literal["max_kl", "min_top1_agreement"]
N_RESAMPLES = 2000


class _Bound(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    pack: str | None = None

    @model_validator(mode="after")
    def _one(self) -> "_Bound":
        if (getattr(self, "mean") is None) == (getattr(self, "p99") is None):
            raise ValueError("give exactly one of `mean` or `p99`")
        return self

    @property
    def on(self) -> Literal["mean", "p99"]:
        return "mean" if getattr(self, "mean") is not None else "p99"

    @property
    def value(self) -> float:
        return float(getattr(self, self.on))


class KLBound(_Bound):
    mean: float | None = Field(None, ge=0)
    p99: float | None = Field(None, ge=0)


class AgreementBound(_Bound):
    mean: float | None = Field(None, ge=0, le=1)
    p99: float | None = Field(None, ge=0, le=1)


class DriftRule(BaseModel):
    """One rule: exactly one of its keys."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_kl: KLBound | None = None
    min_top1_agreement: AgreementBound | None = None

    @model_validator(mode="after")
    def _one(self) -> "DriftRule":
        if (self.max_kl is None) == (self.min_top1_agreement is None):
            raise ValueError("each drift rule has exactly one of max_kl, min_top1_agreement")
        return self

    @property
    def kind(self) -> Kind:
        return "max_kl" if self.max_kl is not None else "min_top1_agreement"

    @property
    def bound(self) -> _Bound:
        bound = self.max_kl or self.min_top1_agreement
        assert bound is not None, "a drift rule has exactly one key (checked when it was read)"
        return bound

    def name(self) -> str:
        """'max_kl[mean]', 'min_top1_agreement[p99]': how every output names the rule."""
        return f"{self.kind}[{self.bound.on}]"


def _p99_kl(rows: list[TokenDrift]) -> float:
    return float(np.percentile(np.concatenate([r.kl for r in rows]), 99.0))


def _statistic(rule: DriftRule) -> tuple[Callable[[list[TokenDrift]], float], str]:
    """The rule's figure over a list of items' records, and what it is, in words."""
    if rule.kind == "max_kl":
        if rule.bound.on == "mean":
            return (lambda rows: float(np.mean([r.kl.mean() for r in rows])),
                    "mean KL (mean over items of each item's per-token mean)")
        return _p99_kl, "p99 KL (99th percentile of the per-token KL, all the scope's tokens)"
    if rule.bound.on == "mean":
        return (lambda rows: float(np.mean([r.same_top1.mean() for r in rows])),
                "same-top-1 share (mean over items)")
    return (lambda rows: float(np.percentile([r.same_top1.mean() for r in rows], 1.0)),
            "same-top-1 share that 99% of items reach (1st percentile over items)")


def interval(rows: list[TokenDrift], stat: Callable[[list[TokenDrift]], float],
             confidence: float) -> tuple[float, float, float]:
    """(value, low, high): the percentile bootstrap over items (scipy.stats.bootstrap, seeded)."""
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
    value, low, high = interval(rows, stat, gate.confidence)
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
    return RuleResult(cand, pack, rule.name(), float(f"{value:.4g}"), limit, passed, f"{text}; {verdict}", "gate",
                      on_fail="fail" if failed else "incomplete")


def evaluate_drift(gate: Any, cand: str, drift: Drift | None, why_none: str | None, packs: dict[str, str],
                   stopped: bool = False) -> list[RuleResult]:
    """Each drift rule of `gate` (a GateConfig) on the candidate's drift; `packs`: item id -> pack."""
    out = [_one(gate, i, rule, cand, drift, why_none, packs) for i, rule in enumerate(gate.drift)]
    if stopped:
        for r in out:
            if r.evaluated and r.status in ("pass", "fail"):
                r.evaluated = False
                r.detail += "; not decided: the candidate stopped early"
    return out


def gate_report(report: Any) -> None:
    """Each candidate of an evals.api.CompareReport judged by its gate's drift rules (after evals.drift_runs)."""
    for result, chosen, verdict in zip(report.candidates, report.gates, report.verdicts):
        verdict.rules += evaluate_drift(chosen, result.name, report.drift.get(result.name), report.drift_note,
                                        {it.id: it.pack for it in result.items}, bool(verdict.stopped))


__all__ = ["AgreementBound", "DriftRule", "KLBound", "evaluate_drift", "gate_report", "interval"]
