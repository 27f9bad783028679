"""Configuration: a run's YAML loaded and validated, the knobs a load sweep turns, and sweeps over a knob."""

from __future__ import annotations

from evalrun.evals.config._config import (
    HFRunConfig, OpenAIRunConfig, RunConfig, load_config, load_config_variant, parse_config, ray_variant,
)
from evalrun.evals.config._sweeps import (
    DEFAULT_COUNT, Number, SweepPoint, Workload, check_knob, config_slo, parse_load, parse_set, parse_workload,
    point_config, sweep_points, value_label, with_workload,
)

__all__ = [
    "DEFAULT_COUNT", "HFRunConfig", "Number", "OpenAIRunConfig", "RunConfig", "SweepPoint", "Workload",
    "check_knob", "config_slo", "load_config", "load_config_variant", "parse_config", "parse_load",
    "parse_set", "parse_workload", "point_config", "ray_variant", "sweep_points", "value_label", "with_workload",
]
