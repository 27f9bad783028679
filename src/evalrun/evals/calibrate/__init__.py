"""`evalrun calibrate`: a config's noise measured on repeats of it, and the gate's false-FAIL rate and power
measured on them, stored beside its runs for `compare` to gate with (docs/gate.md, 'Calibration')."""

from __future__ import annotations

from evalrun.evals.calibrate._profile import (
    PROFILE, GateRates, NoiseProfile, ScopeNoise, SpeedSpread, UnstableField, load_profile, save_profile,
)
from evalrun.evals.calibrate._measure import measure
from evalrun.evals.calibrate._calibrate import Calibration, calibrate

__all__ = [
    "Calibration", "GateRates", "NoiseProfile", "PROFILE", "ScopeNoise", "SpeedSpread", "UnstableField", "calibrate",
    "load_profile", "measure", "save_profile",
]
