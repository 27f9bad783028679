"""Drift rules as read from a gate (`max_kl`, `min_top1_agreement`); decided in evals/drift/rules.py, on the
bootstrap interval, never the point estimate (docs/drift.md, 'Gate rules')."""

from __future__ import annotations

from typing import ClassVar, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Strict(BaseModel):
    """Every gate model: an unknown key or a threshold that is not a finite number is an error."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class OneKey(Strict):
    """A rule written as exactly one of its keys (`max_kl: {mean: 0.05}`): the key is its kind."""

    what: ClassVar[str]

    @model_validator(mode="after")
    def _one(self) -> "OneKey":
        keys = list(type(self).model_fields)
        if sum(getattr(self, k) is not None for k in keys) != 1:
            raise ValueError(f"each {self.what} rule has exactly one of {', '.join(keys)}")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in type(self).model_fields if getattr(self, k) is not None)


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


class DriftRule(OneKey):
    what: ClassVar[str] = "drift"
    max_kl: KLBound | None = None
    min_top1_agreement: AgreementBound | None = None

    @property
    def bound(self) -> _Bound:
        return cast(_Bound, getattr(self, self.kind))

    def name(self) -> str:
        """'max_kl[mean]', 'min_top1_agreement[p99]': how every output names the rule."""
        return f"{self.kind}[{self.bound.on}]"

