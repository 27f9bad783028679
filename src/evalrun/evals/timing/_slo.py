"""Service-level objectives for goodput: `--slo ttft=500ms,tpot=50ms,e2el=10s` or a config's
`slo:` section. A request counts as good only when it meets every SLO given (vLLM's
`--goodput`); a bare number is milliseconds, as there."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from typing import Annotated, Any, Optional

from pydantic import BeforeValidator, PlainSerializer

from evalrun.contract.errors import UsageError

SLO_METRICS = ("ttft", "tpot", "e2el")
_VALUE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(ms|s|us|µs)?\s*$", re.IGNORECASE)
_SCALE = {"ms": 1e-3, "s": 1.0, "us": 1e-6, "µs": 1e-6, None: 1e-3}


class SLOError(UsageError, ValueError):
    """A bad SLO; the message names the key."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class SLO:
    """Limits in seconds; None: no objective on that metric."""

    ttft: float | None = None
    tpot: float | None = None
    e2el: float | None = None

    def given(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def text(self) -> str:
        """'ttft<=500ms, tpot<=50ms': how every output states the objectives."""
        return ", ".join(f"{f.name}<={_ms(v)}" for f in fields(self) if (v := getattr(self, f.name)) is not None)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:g}ms" if seconds < 10 else f"{seconds:g}s"


def seconds_of(key: str, raw: Any) -> float:
    """'500ms', '0.5s', 500 (ms) -> seconds; anything else is an SLOError naming `key`."""
    if isinstance(raw, bool):
        raise SLOError(key, f"{key}: expected a time such as 500ms or 2s, got {raw!r}")
    if isinstance(raw, (int, float)):
        value = float(raw) * _SCALE[None]
    else:
        m = _VALUE.match(str(raw))
        if not m:
            raise SLOError(key, f"{key}: expected a time such as 500ms or 2s, got {raw!r}")
        value = float(m.group(1)) * _SCALE[(m.group(2) or "").lower() or None]
    if not math.isfinite(value) or value <= 0:
        raise SLOError(key, f"{key}: must be a positive time, got {raw!r}")
    return value


def slo_from_mapping(data: Any) -> SLO:
    """A config's `slo:` mapping ({ttft: 500ms, tpot: 50ms, e2el: 10s})."""
    if not isinstance(data, dict) or not data:
        raise SLOError("", "must be a mapping such as {ttft: 500ms, tpot: 50ms, e2el: 10s}")
    unknown = sorted(set(data) - set(SLO_METRICS))
    if unknown:
        raise SLOError(str(unknown[0]), f"unknown SLO {unknown[0]!r}; the SLOs are {', '.join(SLO_METRICS)}")
    return SLO(**{k: seconds_of(k, v) for k, v in data.items()})


def _validated(data: Any) -> SLO | None:
    if data is None or isinstance(data, SLO):
        return data
    try:
        return slo_from_mapping(data)
    except SLOError as exc:
        raise ValueError(str(exc)) from None


def _written(slo: SLO | None) -> dict[str, str] | None:
    """An SLO as a config would write it, in seconds (exact, and read back as the same SLO)."""
    if slo is None:
        return None
    return {f.name: f"{v!r}s" for f in fields(slo) if (v := getattr(slo, f.name)) is not None}


# a config's (or a gate rule's) `slo:` mapping, validated into the SLO and dumped as a mapping again
ConfiguredSLO = Annotated[Optional[SLO], BeforeValidator(_validated), PlainSerializer(_written)]


def parse_slo(option: str) -> SLO:
    """`ttft=500ms,tpot=50ms,e2el=10s` (the --slo option)."""
    data: dict[str, str] = {}
    for part in option.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise SLOError(part.strip(), f"--slo {option!r}: expected METRIC=TIME pairs such as ttft=500ms,tpot=50ms")
        data[key.strip().lower()] = value
    return slo_from_mapping(data)
