"""Drift rules as read from a gate (`max_kl`, `min_top1_agreement`); decided in evals/drift/rules.py, on the
bootstrap interval, never the point estimate (docs/drift.md, 'Gate rules')."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Kind = Literal["max_kl", "min_top1_agreement"]


class Strict(BaseModel):
    """Every gate model: an unknown key or a threshold that is not a finite number is an error."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _Bound(Strict):
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


class DriftRule(Strict):
    """One rule: exactly one of its keys."""

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

