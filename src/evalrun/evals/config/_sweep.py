"""Sweeps: one candidate per value of a knob, compared with the base config, and
a knob-vs-accuracy table — the way KV-compression papers plot score against
compression ratio."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evalrun.evals.files import ConfigError
from evalrun.evals.config._config import RunConfig, load_config, load_config_variant


@dataclass
class SweepPoint:
    values: dict[str, Any]
    config: RunConfig


def parse_set(option: str) -> tuple[str, list[Any]]:
    """`key.path=v1,v2,...` -> (key path, [values]); each value is read as YAML."""
    key, sep, raw = option.partition("=")
    key = key.strip()
    if not sep or not key or not raw.strip():
        raise ConfigError(f"--set {option!r}: expected KEY.PATH=V1,V2,... e.g. acceleration.kv_cache.quant=int2,int4")
    try:
        values = [yaml.safe_load(v) for v in raw.split(",")]
    except yaml.YAMLError:
        raise ConfigError(f"--set {option!r}: cannot read the values") from None
    return key, values


def _label(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(value)).strip("_") or "x"


def sweep_points(base_path: str | Path, sets: list[str]) -> tuple[RunConfig, list[SweepPoint]]:
    """The base config and one validated candidate per combination of the --set values."""
    base = load_config(base_path)
    knobs = [parse_set(s) for s in sets]
    if not knobs:
        raise ConfigError("give at least one --set KEY.PATH=V1,V2,...")
    points = []
    for combo in itertools.product(*(values for _, values in knobs)):
        values = {key: value for (key, _), value in zip(knobs, combo)}
        name = base.name + "".join(f"-{key.rsplit('.', 1)[-1]}-{_label(v)}" for key, v in values.items())
        points.append(SweepPoint(values, load_config_variant(base_path, values, name)))
    names = [p.config.name for p in points]
    if len(set(names)) != len(names):
        raise ConfigError("two sweep points get the same name; use values that differ as text")
    return base, points
