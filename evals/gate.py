"""The gate: declarative rules over a comparison, each reported with its
measured value, threshold and pass/fail.

Rules are relative to the baseline measured in the same job (absolute
thresholds get re-tuned after every library upgrade). The defaults are strict
where precision matters: no dropped or altered amount, number, date or id.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evals.pairing import Comparison, PackComparison

DEFAULT_MAX_HARMFUL = {"amount": 0, "number": 0, "date": 0, "id": 0}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PackRule(_Strict):
    """Rules for one pack ("*" applies to every pack without its own entry)."""

    max_drop: float | None = Field(0.0, ge=0, description="largest allowed loss in points of the gate metric")
    non_inferiority: float | None = Field(
        None, ge=0, description="margin in points: fail when the CI lower bound of the delta is below -margin"
    )
    min_items: int | None = Field(None, ge=1, description="refuse to pass a pack with fewer paired items")


class GateConfig(_Strict):
    """The `gate:` section of a candidate config, or a `--gate` file."""

    metric: Literal["accuracy", "micro_f1"] = "accuracy"
    confidence: float = Field(0.95, gt=0.5, lt=1.0)
    packs: dict[str, PackRule] = Field(default_factory=lambda: {"*": PackRule()})
    # field type (amount, number, date, id, text, enum) or field name -> allowed harmful flips
    max_harmful_flips: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=lambda: dict(DEFAULT_MAX_HARMFUL))

    def pack_rule(self, pack: str) -> PackRule:
        return self.packs.get(pack) or self.packs.get("*") or PackRule()


@dataclass
class RuleResult:
    candidate: str
    pack: str
    rule: str
    measured: float
    threshold: float
    passed: bool
    detail: str = ""

    @property
    def comparator(self) -> str:
        return ">=" if self.rule in ("min_items", "non_inferiority") else "<="


@dataclass
class Verdict:
    candidate: str
    rules: list[RuleResult]
    notes: list[str]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rules)

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.rules if not r.passed]


def load_gate(data: dict[str, Any] | None, file: str | Path = "<gate>", prefix: str = "gate") -> GateConfig:
    """Validate a gate mapping; errors become ConfigError naming the key."""
    from evals.config import ConfigError, validation_error

    if data is None:
        return GateConfig()
    if not isinstance(data, dict):
        raise ConfigError("must be a mapping of gate rules", file=file, path=prefix)
    try:
        return GateConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, file, prefix, GateConfig) from None


def load_gate_file(path: str | Path) -> GateConfig:
    """A gate file holds the rules at the top level or under a `gate:` key."""
    from evals.config import _read_yaml

    data = _read_yaml(Path(path))
    if set(data) == {"gate"}:
        return load_gate(data["gate"], path, "gate")
    return load_gate(data, path, "")


def _delta(pc: PackComparison, metric: str) -> tuple[float, float | None]:
    """(delta points, CI lower bound points) of the gate metric."""
    st = pc.stats
    if metric == "micro_f1":
        interval = st.f1_interval if st else None
        return pc.f1_delta_points, (100 * interval.low if interval else None)
    return pc.delta_points, (100 * st.interval.low if st else None)


def evaluate(comparison: Comparison, gate: GateConfig | None = None) -> Verdict:
    gate = gate or GateConfig()
    rules: list[RuleResult] = []
    cand = comparison.candidate
    notes = []
    for pc in comparison.packs:
        if pc.speed_only:
            # nothing scored: no accuracy rule applies, but a candidate that fails to generate still fails
            rules.append(RuleResult(cand, pc.pack, "errors", float(pc.errors), 0.0, pc.errors == 0,
                                    "items whose generation raised (speed-only pack: no fields to score)"))
            notes.append(f"{pc.pack}: speed only (items ask for no fields): no accuracy rules")
            continue
        rule = gate.pack_rule(pc.pack)
        delta, low = _delta(pc, gate.metric)
        if rule.max_drop is not None:
            rules.append(RuleResult(cand, pc.pack, "max_drop", round(-delta, 2) + 0.0, rule.max_drop, -delta <= rule.max_drop + 1e-9,
                                    f"{gate.metric} drop in points (baseline - candidate)"))
        if rule.non_inferiority is not None:
            measured = round(low, 2) if low is not None else float("-inf")
            rules.append(RuleResult(cand, pc.pack, "non_inferiority", measured, -rule.non_inferiority,
                                    measured >= -rule.non_inferiority,
                                    f"lower {gate.confidence:.0%} bound of the {gate.metric} delta, points"))
        if rule.min_items is not None:
            rules.append(RuleResult(cand, pc.pack, "min_items", float(pc.n), float(rule.min_items), pc.n >= rule.min_items,
                                    "paired items"))
        flips_by: dict[str, int] = {}
        for f in pc.harmful:
            flips_by[f.kind] = flips_by.get(f.kind, 0) + 1
            flips_by[f"field:{f.field}"] = flips_by.get(f"field:{f.field}", 0) + 1
        kinds_present = {f.kind for f in pc.harmful} | pc.field_kinds
        for key, limit in gate.max_harmful_flips.items():
            by_field = f"field:{key}" in flips_by or key in pc.field_names
            if not by_field and key not in kinds_present:
                continue
            measured = flips_by.get(f"field:{key}" if by_field else key, 0)
            what = "field" if by_field else "field type"
            rules.append(RuleResult(cand, pc.pack, f"max_harmful_flips[{key}]", float(measured), float(limit),
                                    measured <= limit, f"{what} {key}: correct at baseline, not in the candidate"))
    if comparison.missing_in_candidate:
        notes.append(f"{len(comparison.missing_in_candidate)} baseline item(s) missing from {cand}")
        rules.append(RuleResult(cand, "*", "missing_items", float(len(comparison.missing_in_candidate)), 0.0, False,
                                "items the candidate did not answer"))
    if comparison.missing_in_baseline:
        notes.append(f"{len(comparison.missing_in_baseline)} candidate item(s) missing from the baseline")
    for pc in comparison.packs:
        if pc.stats and pc.stats.mde is not None:
            rule = gate.pack_rule(pc.pack)
            threshold = rule.non_inferiority if rule.non_inferiority is not None else rule.max_drop
            if threshold is not None and threshold > 0 and 100 * pc.stats.mde > threshold:
                notes.append(
                    f"{pc.pack}: {pc.n} items can only detect a difference of about {100 * pc.stats.mde:.1f} points; "
                    f"the threshold of {threshold:g} points needs more items"
                )
    return Verdict(cand, rules, notes)
