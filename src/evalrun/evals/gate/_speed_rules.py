"""Speed rules in the gate: a candidate that is not faster where it claims to be fails.

Each rule stands on a paired interval or a one-sided bound, never a point estimate; one that cannot be
measured honestly (emulated, another device, a busy machine) is not evaluated (docs/speed.md, 'Speed rules')."""

from __future__ import annotations

import math
from typing import Any, ClassVar, cast

from pydantic import Field, field_validator

from evalrun.contract.types import Generation
from evalrun.evals.timing import (
    ConfiguredSLO, SLO, Speedup, latency, load as speed_load, pair_timings, parse_metric, speedup,
)
from evalrun.evals.gate._drift_rules import OneKey, Strict
from evalrun.evals.gate._verdict import ALL_PACKS, RuleResult


class _Scope(Strict):
    pack: str | None = None
    shape: str | None = None  # a latency shape (items' meta.shape)


class SpeedBound(_Scope):
    metric: str
    value: float = Field(gt=0)

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        parse_metric(v)
        return v


class GoodputBound(_Scope):
    value: float = Field(gt=0, le=1)
    slo: ConfiguredSLO = None  # default: the comparison's SLO (--slo, or the config's `slo:`)


class SpeedRule(OneKey):
    what: ClassVar[str] = "speed"
    min_speedup: SpeedBound | None = None
    max_regression: SpeedBound | None = None
    min_goodput: GoodputBound | None = None

    @property
    def bound(self) -> SpeedBound | GoodputBound:
        return cast("SpeedBound | GoodputBound", getattr(self, self.kind))

    def name(self) -> str:
        """'min_speedup[tpot_p50]', 'min_goodput[short]': how every output names the rule."""
        b = self.bound
        parts = [getattr(b, "metric", None), f"shape {b.shape}" if b.shape else None]
        inner = ", ".join(p for p in parts if p)
        return f"{self.kind}[{inner}]" if inner else self.kind


def _no_claim(run: Any, base: Any) -> str | None:
    m, bm = run.manifest, base.manifest
    if m.emulated:
        return f"{', '.join(m.emulated)} is emulated without real kernels: no speed claim can be checked"
    if (m.device, m.dtype) != (bm.device, bm.dtype):
        return f"ran on {m.device} {m.dtype}, the baseline on {bm.device} {bm.dtype}: not comparable"
    return None


def _interval_text(sp: Speedup) -> str:
    return f"{sp.value:.2f}x [{sp.low:.2f}, {sp.high:.2f}] over {sp.n} paired requests ({sp.basis})"


def _speed_result(rule: SpeedRule, cand: str, pack: str, base: Any, run: Any, ids: list[str],
                  confidence: float) -> RuleResult:
    b = rule.bound
    assert isinstance(b, SpeedBound)
    metric = b.metric
    b_gens, c_gens, basis = pair_timings(base, run)
    sp = speedup(b_gens, c_gens, metric, ids, confidence, basis)
    if rule.kind == "min_speedup":
        threshold, what = b.value, f"{metric} speedup (baseline / candidate)"
    else:
        threshold, what = 1.0 / (1.0 + b.value), f"{metric} speedup (at most {b.value:.0%} slower)"
    if sp is None:
        return RuleResult(cand, pack, rule.name(), float("nan"), threshold, False,
                          f"{what}: fewer than 2 requests timed in both runs", "gate", evaluated=False)
    passed = sp.low >= threshold
    verdict = "supported" if passed else f"not shown: the interval's lower end {sp.low:.2f}x is below {threshold:.2f}x"
    timing = speed_load.timing(base, run, basis)
    if not timing.vouched:
        # timed on a machine that measured itself busy: the interval is the load's as much as the candidate's
        return RuleResult(cand, pack, rule.name(), round(sp.value, 3), round(threshold, 3), False,
                          f"{what}: {_interval_text(sp)}; not vouched for: {timing.warning}", "gate", evaluated=False)
    warned = f" ({timing.warning})" if timing.warning else ""
    return RuleResult(cand, pack, rule.name(), round(sp.value, 3), round(threshold, 3), passed,
                      f"{what}: {_interval_text(sp)}; {verdict}{warned}", "gate")


def share_lower_bound(good: int, n: int, confidence: float) -> float:
    """One-sided Clopper-Pearson lower bound of a share: the least the true share can be."""
    from scipy import stats as _sps  # lazy: importing scipy.stats takes ~1 s
    return 0.0 if good == 0 else float(_sps.beta.ppf(1.0 - confidence, good, n - good + 1))


def requests_needed(value: float, confidence: float) -> int:
    """Fewest requests at which even all good could bound the share at `value` (value**n <= 1 - confidence)."""
    return 1 if value <= 1.0 - confidence else math.ceil(math.log(1.0 - confidence) / math.log(value) - 1e-12)


def _goodput_result(rule: SpeedRule, cand: str, pack: str, run: Any, ids: list[str], slo: SLO | None,
                    confidence: float) -> RuleResult:
    b = rule.bound
    assert isinstance(b, GoodputBound)
    chosen = b.slo or slo
    if chosen is None or not chosen.given():
        return RuleResult(cand, pack, rule.name(), float("nan"), b.value, False,
                          "no SLO given (--slo, the config's `slo:`, or the rule's own `slo:`)", "gate", evaluated=False)
    gens: list[Generation] = [run.generations[i] for i in ids if i in run.generations]
    good = sum(latency.meets(g, chosen) for g in gens)
    n = len(gens)
    low = share_lower_bound(good, n, confidence) if n else 0.0
    need = requests_needed(b.value, confidence) if b.value < 1 else None
    text = (f"share of requests meeting {chosen.text()}: {good} of {n}; its {confidence:.0%} lower bound "
            f"{low:.3f}")
    short = n == 0 or (need is not None and n < need) or b.value == 1
    result = RuleResult(cand, pack, rule.name(), round(good / n, 4) if n else float("nan"), b.value,
                        low >= b.value, text, "gate", evaluated=n > 0)
    if short and not result.passed:
        result.on_fail = "incomplete"
        result.items_needed = need
        result.detail += (f"; {n} requests cannot bound it at {b.value:g}" +
                          (f" (needs at least {need})" if need else ""))
    return result


def evaluate_speed(rules: list[SpeedRule], cand: str, base: Any, run: Any, slo: SLO | None,
                   confidence: float) -> list[RuleResult]:
    out = []
    for rule in rules:
        b = rule.bound
        pack = b.pack or ALL_PACKS
        ids = [it.id for it in run.items if (b.pack is None or it.pack == b.pack)
               and (b.shape is None or it.meta.shape == b.shape)]
        reason = _no_claim(run, base) if rule.kind != "min_goodput" else None
        if reason is not None:
            out.append(RuleResult(cand, pack, rule.name(), float("nan"), rule.bound.value, False, reason, "gate",
                                  evaluated=False))
        elif rule.kind == "min_goodput":
            out.append(_goodput_result(rule, cand, pack, run, ids, slo, confidence))
        else:
            out.append(_speed_result(rule, cand, pack, base, run, ids, confidence))
    return out
