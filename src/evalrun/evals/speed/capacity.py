"""Capacity: how many requests one device serves, and how many devices a daily volume needs.

Deliberately simple and said so in every report: E2E request throughput (prefill counted, so prefill-bound
extraction is not flattered), assumed to hold at the run's own load (docs/speed.md, 'Capacity')."""

from __future__ import annotations

import math
from dataclasses import dataclass

SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class CapacityInputs:
    requests_per_day: float | None = None
    peak_factor: float = 1.0

    def __post_init__(self) -> None:
        if self.requests_per_day is not None and self.requests_per_day < 0:
            raise ValueError(f"requests_per_day must be >= 0, got {self.requests_per_day}")
        if self.peak_factor < 1.0:
            raise ValueError(f"peak_factor must be >= 1, got {self.peak_factor}")


@dataclass(frozen=True)
class Capacity:
    requests_per_second: float  # per device, as measured
    peak_requests_per_second: float | None
    devices: int | None


def devices_needed(requests_per_day: float, peak_factor: float, per_device_rps: float) -> int:
    """Devices that serve the day's peak rate: ceil(volume / 86,400 x peak / per-device rate)."""
    if per_device_rps <= 0:
        raise ValueError("per-device requests/s must be positive")
    peak = requests_per_day / SECONDS_PER_DAY * peak_factor
    # a tiny tolerance so 2.0000000001 devices from float rounding is 2, not 3
    return math.ceil(peak / per_device_rps - 1e-9) if peak > 0 else 0


def estimate(requests_per_second: float, inputs: CapacityInputs) -> Capacity:
    if requests_per_second <= 0:
        raise ValueError("request throughput must be positive")
    rpd = inputs.requests_per_day
    return Capacity(requests_per_second=requests_per_second,
                    peak_requests_per_second=rpd / SECONDS_PER_DAY * inputs.peak_factor if rpd is not None else None,
                    devices=devices_needed(rpd, inputs.peak_factor, requests_per_second) if rpd is not None else None)


def assumptions(inputs: CapacityInputs, batch_size: int | None, concurrency: int | None, device: str) -> str:
    """One sentence a reader needs before trusting the numbers."""
    volume = (f"{inputs.requests_per_day:,.0f} requests/day at peak factor {inputs.peak_factor:g} "
              f"(peak {inputs.requests_per_day / SECONDS_PER_DAY * inputs.peak_factor:,.3g} requests/s)"
              if inputs.requests_per_day is not None else "no daily volume given (--requests-per-day)")
    load = f"concurrency {concurrency}" if concurrency else f"batch size {batch_size or '?'}"
    return (f"Capacity: each run's measured request throughput (completed requests over its wall clock, prefill "
            f"included) at its own load (baseline: {load}) on {device or '?'}, on the run's own prompts and "
            f"outputs, assumed to hold in serving; {volume}.")
