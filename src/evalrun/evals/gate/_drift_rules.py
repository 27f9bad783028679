"""Drift rules in the gate (issue 30, item 5): a candidate that moves the baseline's distribution too far.

    gate:
      drift:
        - max_kl: {mean: 0.05}                      # mean over items of each item's mean KL, every pack
        - max_kl: {p99: 0.5, pack: needle_numbers}  # the 99th percentile of the pack's per-token KL
        - min_top1_agreement: {mean: 0.95}          # mean over items of each item's same-top-1 share
        - min_top1_agreement: {p99: 0.8}            # the agreement 99% of items reach (their 1st percentile)

The rules as read from a gate (decided in evals/drift/rules.py). The drift figures (evals/drift/_drift.py)
are always reported when measured; these rules only gate when the gate names them. Each is decided on its bootstrap interval over items at the gate's confidence, never
on the point estimate: it fails only when the whole interval is beyond the limit, passes only when the
whole interval is within it, and otherwise is inconclusive (incomplete, exit 4). A rule whose drift was
not measured (no `--drift`, no logprobs stored with the baseline, a runner that cannot teacher-force)
cannot be vouched for: incomplete, with one line naming the gate file and key.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Kind = Literal["max_kl", "min_top1_agreement"]


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
    mean: float | None = Field(default=None, ge=0)
    p99: float | None = Field(default=None, ge=0)


class AgreementBound(_Bound):
    mean: float | None = Field(default=None, ge=0, le=1)
    p99: float | None = Field(default=None, ge=0, le=1)


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


__all__ = ["AgreementBound", "DriftRule", "KLBound", "Kind"]
