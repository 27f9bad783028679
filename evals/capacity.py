"""Capacity: how many requests one device serves, and how many devices a daily volume needs.

The cost side of adopting an acceleration, from the measured decode
throughput. Deliberately simple and stated as such in every report:

- decode-bound: a request costs `output_tokens` decode tokens at the run's
  aggregate decode throughput; prefill time is not counted;
- that throughput was measured at the run's batch size on the run's device,
  and is assumed to hold in serving;
- devices = ceil(peak requests/s / requests/s per device), where peak
  requests/s = requests per day / 86,400 x peak factor; no headroom beyond
  the peak factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class CapacityInputs:
    """What the user asks: volume, peak factor, and optionally the mean output length."""

    requests_per_day: float | None = None
    peak_factor: float = 1.0
    output_tokens: float | None = None  # None: the baseline run's mean new tokens

    def __post_init__(self) -> None:
        if self.requests_per_day is not None and self.requests_per_day < 0:
            raise ValueError(f"requests_per_day must be >= 0, got {self.requests_per_day}")
        if self.peak_factor < 1.0:
            raise ValueError(f"peak_factor must be >= 1, got {self.peak_factor}")
        if self.output_tokens is not None and self.output_tokens <= 0:
            raise ValueError(f"output_tokens must be > 0, got {self.output_tokens}")


@dataclass(frozen=True)
class Capacity:
    decode_tokens_per_second: float  # per device, at the measured batch size
    output_tokens: float
    requests_per_second: float  # per device
    peak_requests_per_second: float | None
    devices: int | None


def requests_per_second(decode_tokens_per_second: float, output_tokens: float) -> float:
    """Requests per second one device completes when each needs `output_tokens` decode tokens."""
    if decode_tokens_per_second <= 0 or output_tokens <= 0:
        raise ValueError("decode throughput and output tokens must be positive")
    return decode_tokens_per_second / output_tokens


def devices_needed(requests_per_day: float, peak_factor: float, per_device_rps: float) -> int:
    """Devices that serve the day's peak rate: ceil(volume / 86,400 x peak / per-device rate)."""
    if per_device_rps <= 0:
        raise ValueError("per-device requests/s must be positive")
    peak = requests_per_day / SECONDS_PER_DAY * peak_factor
    # a tiny tolerance so 2.0000000001 devices from float rounding is 2, not 3
    return math.ceil(peak / per_device_rps - 1e-9) if peak > 0 else 0


def estimate(decode_tokens_per_second: float, output_tokens: float, inputs: CapacityInputs) -> Capacity:
    rps = requests_per_second(decode_tokens_per_second, output_tokens)
    rpd = inputs.requests_per_day
    return Capacity(
        decode_tokens_per_second=decode_tokens_per_second,
        output_tokens=output_tokens,
        requests_per_second=rps,
        peak_requests_per_second=rpd / SECONDS_PER_DAY * inputs.peak_factor if rpd is not None else None,
        devices=devices_needed(rpd, inputs.peak_factor, rps) if rpd is not None else None,
    )


def assumptions(inputs: CapacityInputs, output_tokens: float, batch_size: int | None, device: str) -> str:
    """One sentence a reader needs before trusting the numbers."""
    volume = (f"{inputs.requests_per_day:,.0f} requests/day at peak factor {inputs.peak_factor:g} "
              f"(peak {inputs.requests_per_day / SECONDS_PER_DAY * inputs.peak_factor:,.3g} requests/s)"
              if inputs.requests_per_day is not None else "no daily volume given (--requests-per-day)")
    return (f"Capacity: decode-bound estimate (prefill time not counted) from each run's measured aggregate decode "
            f"throughput at each run's measured batch size (baseline: {batch_size or '?'}) on {device or '?'}, assumed "
            f"to hold in serving; "
            f"{output_tokens:,.0f} output tokens per request; {volume}.")
