"""Acceleration methods, one module each, found by the registry and keyed by their config name.

Method modules import only `base` (never this package), so the registry can import them without a cycle.
"""

from __future__ import annotations

from evalrun.runners.accel.accelerations import Accelerations, build_accelerations, validate_accelerations
from evalrun.runners.accel.base import AccelSettings, Acceleration, Capabilities
from evalrun.runners.accel.registry import all_methods, headlines, kv_bytes_ratio, method_class, method_label

__all__ = ["AccelSettings", "Acceleration", "Accelerations", "Capabilities", "all_methods", "build_accelerations",
           "headlines", "kv_bytes_ratio", "method_class", "method_label", "validate_accelerations"]
