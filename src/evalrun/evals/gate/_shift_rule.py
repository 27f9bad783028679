"""`shift`: a one-sided sign test over a pack's length or depth buckets. A small drop present in every bucket is
systematic (vLLM's FP8 study judged such a pattern so by eye), yet no bucket's own test sees it and a pack-level
tolerance sized for noise lets it through; buckets the candidate left level say nothing and are dropped."""

from __future__ import annotations

from typing import Iterable, Literal, Mapping

from evalrun.contract.types import Item, ItemMeta
from evalrun.evals.compare import PackComparison, slices
from evalrun.evals.files import ConfigError
from evalrun.evals.gate._drift_rules import Strict
from evalrun.evals.gate._verdict import ALL_PACKS, RuleResult
from evalrun.evals.stats import sign_test

# `by` -> the Breakdown dimension evals.compare slices a pack by, and what an item needs to be in one
DIMENSIONS: dict[str, tuple[str, str]] = {"length": ("context", "a context length (target_tokens or context_tokens)"),
                                          "depth": ("depth", "a depth (depth or field_depth)")}


class ShiftRule(Strict):
    """`shift: {by: length}`: fail when more of the pack's buckets lost than chance allows (sign test at the
    gate's confidence); a candidate level in a bucket leaves it out."""

    by: Literal["length", "depth"]


def check_shift(packs: Mapping[str, ShiftRule | None], metric: str, items: Iterable[Item], file: str,
                where: str) -> None:
    """`shift` on a pack whose items carry no length (or depth) has no bucket to test: exit 2 naming the key, as
    is a metric the buckets do not count (they hold item accuracy). `packs`: gate key -> its shift rule."""
    by_pack: dict[str, list[ItemMeta]] = {}
    for it in items:
        by_pack.setdefault(it.pack, []).append(it.meta)
    for key, rule in packs.items():
        if rule is None:
            continue
        if metric != "accuracy":
            raise ConfigError(f"shift compares item accuracy per bucket; the gate's metric is {metric}",
                              file=file, path=f"{where}.{key}.shift")
        bare = [p for p, metas in sorted(by_pack.items()) if (p == key or (key == ALL_PACKS and p not in packs))
                and not any(DIMENSIONS[rule.by][0] in dict(slices(m)) for m in metas)]
        if bare:
            raise ConfigError(f"pack(s) {', '.join(bare)} have no {rule.by} buckets: no item carries "
                              f"{DIMENSIONS[rule.by][1]}" + ("; give them their own entry without shift"
                                                             if key == ALL_PACKS else ""), file=file,
                              path=f"{where}.{key}.shift.by")


def _edge(value: str) -> float:
    """Sort key of a bucket label: "<=512" and "<=2k" by their edge, a depth ("0.50") by its value."""
    text = value.removeprefix("<=")
    return float(text[:-1]) * 1024 if text.endswith("k") else float(text)


def shift_rule(rule: ShiftRule, pc: PackComparison, cand: str, confidence: float) -> RuleResult:
    """The sign test over the pack's buckets of `rule.by`, with every bucket's delta in the detail. Not testable
    where even every bucket the baseline got an item right in going down would not be significant."""
    dim = DIMENSIONS[rule.by][0]
    buckets = sorted((b for b in pc.breakdowns.values() if b.dimension == dim), key=lambda b: _edge(b.value))
    moved = [b.candidate_correct - b.baseline_correct for b in buckets if b.candidate_correct != b.baseline_correct]
    lower, alpha = sum(d < 0 for d in moved), 1.0 - confidence
    p = sign_test(lower, len(moved))
    allowed = next((k - 1 for k in range(len(moved) + 1) if sign_test(k, len(moved)) < alpha), len(moved))
    can_drop = sum(b.baseline_correct > 0 for b in buckets)
    best = sign_test(can_drop, can_drop)
    deltas = ", ".join(f"{b.value} {100 * (b.candidate_accuracy - b.baseline_accuracy):+.1f}" for b in buckets)
    detail = (f"{rule.by} buckets lower in item accuracy (one-sided sign test, level buckets dropped); delta in points "
              f"per bucket: {deltas or 'no bucket'}; {lower} of the {len(moved)} that moved are lower, p = {p:.3g} "
              f"(fails below {alpha:.3g})")
    cannot = "" if best < alpha else (f"{can_drop} {rule.by} bucket(s) with a baseline item right: even all lower "
                                      f"gives p = {best:.3g}, not below {alpha:.3g}")
    return RuleResult(cand, pc.pack, "shift", float(lower), float(allowed), p >= alpha, detail, "gate",
                      in_scope=pc.n, cannot_fail=cannot)
