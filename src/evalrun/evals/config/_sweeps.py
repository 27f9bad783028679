"""Sweeps over a knob: an accuracy sweep (`sweep_points`, one candidate per value of a config key) and a load
sweep's knob, values, workload and per-point config. All checked before any model loads, so a knob that does
not apply is one ConfigError naming the file and the key."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, Union

import yaml
from pydantic import BaseModel, ValidationError

from evalrun.evals.files import ConfigError, validation_error
from evalrun.evals.config._config import OpenAIRunConfig, RunConfig, TaskRef, load_config, load_config_variant
from evalrun.evals.timing import SLO
from evalrun.runners.openai import OpenAISettings
from evalrun.tasks import get_pack
from evalrun.tasks.latency import PRESETS, LatencyShape

Number = Union[int, float]

# knob -> (runner it applies to, its key in the config, the values' type)
KNOBS: dict[str, tuple[str, str, type]] = {
    "batch_size": ("hf", "batch_size", int), "concurrency": ("openai", "openai.concurrency", int),
    "request_rate": ("openai", "openai.request_rate", float),
}
DEFAULT_COUNT = 8


def parse_load(option: str) -> tuple[str, list[Number]]:
    """`KNOB=V1,V2,...` -> (knob, values ascending)."""
    knob, sep, raw = option.partition("=")
    knob = knob.strip()
    if not sep or not knob or not raw.strip():
        raise ConfigError(f"--load {option!r}: expected KNOB=V1,V2,... e.g. batch_size=1,2,4,8", path="--load")
    if knob not in KNOBS:
        raise ConfigError(f"--load {knob!r}: unknown knob; the knobs are {', '.join(KNOBS)}", path="--load")
    kind = KNOBS[knob][2]
    values: list[Number] = []
    for text in (v.strip() for v in raw.split(",")):
        try:
            value = int(text) if kind is int else float(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise ConfigError(f"--load {option!r}: {text!r} is not {what}", path="--load") from None
        if value in values:
            raise ConfigError(f"--load {option!r}: {text!r} is given twice", path="--load")
        values.append(value)
    return knob, sorted(values)


def check_knob(config: RunConfig, knob: str) -> str:
    """The config key the knob sets; ConfigError naming the file and key when it is not this runner's."""
    if knob not in KNOBS:
        raise ConfigError(f"unknown load knob {knob!r}; the knobs are {', '.join(KNOBS)}", path="--load")
    runner, key, _ = KNOBS[knob]
    if config.runner == runner:
        return key
    other = "batch_size" if runner == "openai" else "concurrency or request_rate"
    why = (f"--load {knob} sets `{key}`, which only the {runner} runner reads (this config's runner is "
           f"{config.runner}; sweep {other} instead)")
    raise ConfigError(why, file=config.source or None, path=key)


def value_label(value: Number) -> str:
    """2, 2.5: how a knob value reads in names, tables and sentences."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def point_name(config: RunConfig, knob: str, value: Number) -> str:
    return f"{config.name}-{knob}-{_label(value_label(value))}"


M = TypeVar("M", bound=BaseModel)


def _revalidated(model: M, update: dict[str, Any]) -> M:
    """A copy of a validated model with some fields changed and validated again (model_copy would not)."""
    return type(model).model_validate({name: getattr(model, name) for name in type(model).model_fields} | update)


def point_config(config: RunConfig, knob: str, value: Number, name: str | None = None) -> RunConfig:
    """The config at one load, validated as the file's would be, with a name of its own."""
    check_knob(config, knob)
    file = config.source or "<config>"
    update: dict[str, Any] = {"name": name or point_name(config, knob, value)}
    try:
        if knob == "batch_size":
            update["batch_size"] = value
        else:
            assert isinstance(config, OpenAIRunConfig)  # check_knob: concurrency and request_rate are openai's
            update["openai"] = _revalidated(config.openai, {knob: value})
    except ValidationError as exc:
        raise validation_error(exc, file, "openai", OpenAISettings) from None
    try:
        return _revalidated(config, update)
    except ValidationError as exc:
        raise validation_error(exc, file, "", type(config)) from None


@dataclass(frozen=True)
class Workload:
    """The latency pack at these shapes, `count` items each, in place of every config's tasks."""

    shapes: tuple[str | LatencyShape, ...]
    count: int = DEFAULT_COUNT

    def text(self) -> str:
        names = [s if isinstance(s, str) else f"{s.name}:{s.input_tokens}:{s.output_tokens}" for s in self.shapes]
        return f"latency pack: {', '.join(names)} x {self.count}"


def parse_workload(option: str, count: int = DEFAULT_COUNT) -> Workload:
    """`short,long` (the presets) or your own `NAME:INPUT_TOKENS:OUTPUT_TOKENS`, e.g. `chat:500:150`."""
    shapes: list[str | LatencyShape] = []
    for part in (p.strip() for p in option.split(",")):
        if part in PRESETS:
            shapes.append(part)
            continue
        bits = part.split(":")
        try:
            if len(bits) != 3:
                raise ValueError
            shapes.append(LatencyShape(name=bits[0], input_tokens=int(bits[1]), output_tokens=int(bits[2])))
        except (ValueError, ValidationError):
            raise ConfigError(f"--workload {option!r}: {part!r} is neither a preset ({', '.join(PRESETS)}) nor "
                              "NAME:INPUT_TOKENS:OUTPUT_TOKENS (input 32 or more, output 1 or more)",
                              path="--workload") from None
    workload = Workload(tuple(shapes), count)
    workload_tasks(workload)  # repeated names, a bad count: exit 2 now
    return workload


def workload_tasks(workload: Workload) -> list[TaskRef]:
    spec = get_pack("latency")
    try:
        params = spec.params.model_validate({"shapes": list(workload.shapes), "count": workload.count})
    except ValidationError as exc:
        raise validation_error(exc, "--workload", "", spec.params) from None
    return [TaskRef(pack=spec.name, params=params)]


def with_workload(config: RunConfig, workload: Workload | None) -> RunConfig:
    """The config with its tasks replaced by the workload's (unchanged without one)."""
    return config if workload is None else _revalidated(config, {"tasks": workload_tasks(workload)})


def config_slo(config: RunConfig) -> SLO | None:
    """The config's own `slo:` section (validated when the config was loaded); None without one."""
    return config.slo


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
