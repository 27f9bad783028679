"""Loading and validating configuration YAML: every way a config can be wrong is one ConfigError naming the
file, the key path and what is allowed, so the CLI prints one line and exits 2."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalrun.contract.generation import GenerationSettings
from evalrun.evals.files import (
    ConfigError, MAX_EXTENDS_DEPTH, YamlProblem, check_finite, merge, merge_origins, origin_file, origins_of,
    read_yaml as _read_yaml, validation_error,
)
from evalrun.evals.timing import ConfiguredSLO
from evalrun.evals.gate import GateConfig, load_gate
from evalrun.runners.accel import Accelerations
from evalrun.runners.config_rules import RuleBroken
from evalrun.runners.fault import Instrument
from evalrun.runners.openai import OpenAIRunnerSettings
from evalrun.runners.ray import RaySettings
from evalrun.runners.runner_settings import HFSettings, foreign_keys
from evalrun.tasks import get_pack
from evalrun.tasks.base import PackParams

# a config's name makes its run directory `<name>-<key12>[-r<n>][.replaced-<time>]`, which must fit NAME_MAX (255)
MAX_NAME_LENGTH = 128
T = TypeVar("T")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TaskRef(_Strict):
    """One pack with its validated parameters."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, allow_inf_nan=False)

    pack: str
    params: PackParams


class RunConfig(_Strict):
    """One serving configuration: model, runner, decoding and tasks. What the runner reads is in its own
    settings, so a loaded config is one of the two below (`AnyRunConfig`); a key only the other runner
    reads is a config error (runners/runner_settings.py)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, allow_inf_nan=False)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    model: str = "smollm2-135m"
    runner: Literal["hf", "openai"] = "hf"
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    # top-k of each token's distribution stored beside the run for teacher-forced drift (docs/drift.md;
    # a served engine gives at most 20); 0 stores none. Changes no output: not in the key
    logprobs: int = Field(default=20, ge=0, le=1024)
    tasks: list[TaskRef]
    # rules this config is gated by when it is a candidate; never part of the cache key
    gate: GateConfig | None = None
    # the SLOs goodput counts against ({ttft: 500ms, tpot: 50ms, e2el: 10s}; a bare number is ms); not in the key
    slo: ConfiguredSLO = None
    # "interleaved" re-times batches of both runs alternately (A B, then B A), so a machine whose load
    # changes between the runs cannot bias the speedup; "auto": interleaved when the gate has speed rules
    timing: Literal["auto", "sequential", "interleaved"] = "auto"
    timing_batches: int = Field(default=8, ge=2, le=10_000, description="batches per side re-timed when interleaved")
    # a measuring instrument (faults planted into the answers, runners/fault.py): another run (in the key), never
    # a candidate a gate can pass
    instrument: Instrument | None = None
    source: str = ""

    @field_validator("name")
    @classmethod
    def _name_fits_a_directory(cls, value: str) -> str:
        if len(value) > MAX_NAME_LENGTH:
            raise ValueError(f"{len(value)} characters, at most {MAX_NAME_LENGTH}: the name makes the run directory "
                             "(<name>-<key>), which must fit a file name (255 bytes) with room for replicates (-r2) "
                             "and --fresh (.replaced-<time>)")
        return value

    def tasks_dump(self) -> list[dict[str, Any]]:
        return [{"pack": t.pack, **t.params.model_dump(mode="json")} for t in self.tasks]

    def accelerations(self) -> Accelerations:
        """The accelerations the hf runner applies (a served engine applies its own: none here)."""
        return Accelerations.none()


class HFRunConfig(RunConfig, HFSettings):
    """`runner: hf` (the default): the model generates in this process or on Ray actors."""

    runner: Literal["hf"] = "hf"

    def accelerations(self) -> Accelerations:
        return self.acceleration


class OpenAIRunConfig(RunConfig, OpenAIRunnerSettings):
    """`runner: openai`: the items go to an OpenAI-compatible server, reached or launched."""

    runner: Literal["openai"]  # pyright: ignore[reportGeneralTypeIssues]


# a loaded config: which one its `runner:` says
AnyRunConfig = Annotated[Union[HFRunConfig, OpenAIRunConfig], Field(discriminator="runner")]
_BY_RUNNER: dict[str, type[HFRunConfig] | type[OpenAIRunConfig]] = {"hf": HFRunConfig, "openai": OpenAIRunConfig}


_TOP_KEYS = (set(HFRunConfig.model_fields) | set(OpenAIRunConfig.model_fields)) - {"source"} | {"extends"}


Origins = dict[tuple[Any, ...], Path]


def _extends_chain(path: Path) -> list[tuple[Path, dict[str, Any]]]:
    """[(file, its own keys)] from `path` up the extends chain; top-level keys are checked here so a typo
    names its file."""
    chain: list[tuple[Path, dict[str, Any]]] = []
    current = path.resolve()
    while True:
        seen = [p for p, _ in chain]
        if current in seen:
            names = " -> ".join(p.name for p in (*seen[seen.index(current):], current))
            raise ConfigError(f"circular extends: {names}", file=chain[-1][0], path="extends")
        if len(chain) >= MAX_EXTENDS_DEPTH:
            raise ConfigError(f"extends chain deeper than {MAX_EXTENDS_DEPTH} files (from {path.name} through "
                              f"{chain[-1][0].name}); flatten it", file=path, path="extends")
        data = _read_yaml(current, (chain[-1][0], "extends") if chain else None)
        unknown = sorted(str(k) for k in set(data) - _TOP_KEYS)
        if unknown:
            raise ConfigError(f"unknown key; allowed: {', '.join(sorted(_TOP_KEYS))}", file=current, path=unknown[0])
        parent = data.pop("extends", None)
        chain.append((current, data))
        if parent is None:
            return chain
        if not isinstance(parent, str) or not parent.strip():
            raise ConfigError("must be a path to another config file", file=current, path="extends")
        parent_path = current.parent / parent
        if not parent_path.exists():
            raise ConfigError(f"extended file not found: {parent_path}", file=current, path="extends")
        current = parent_path.resolve()


def _resolve_with_origins(path: Path) -> tuple[dict[str, Any], Origins]:
    """The merged mapping of a config and its ancestors, and which file wrote each key path."""
    data: dict[str, Any] = {}
    origins: Origins = {}
    for file, own in reversed(_extends_chain(path)):
        origins = merge_origins(origins, origins_of(own, file), own)
        data = merge(data, own)
    return data, origins


def _parse_tasks(raw: Any, file: Path, base_dir: Path | None = None) -> list[TaskRef]:
    """Each task's parameters; relative data paths resolve against the file that wrote `tasks`."""
    if not isinstance(raw, list) or not raw:
        raise ConfigError("must be a non-empty list of {pack: NAME, ...parameters}", file=file, path="tasks")
    refs: list[TaskRef] = []
    for i, entry in enumerate(raw):
        where = f"tasks[{i}]"
        if not isinstance(entry, dict) or "pack" not in entry:
            raise ConfigError("each task needs a 'pack' key", file=file, path=where)
        params = dict(entry)
        name = params.pop("pack")
        try:
            spec = get_pack(str(name))
        except KeyError as exc:
            raise ConfigError(str(exc.args[0]), file=file, path=f"{where}.pack") from None
        try:
            checked = spec.params.model_validate(params, context={"base_dir": base_dir or file.parent})
            refs.append(TaskRef(pack=spec.name, params=checked))
        except ValidationError as exc:
            raise validation_error(exc, file, where, spec.params) from None
    _check_pack_names(refs, file)
    return refs


def report_name(ref: TaskRef) -> str:
    """The pack name a task's items report under: its `name:` where the pack takes one."""
    name = getattr(ref.params, "name", None) if "name" in type(ref.params).model_fields else None
    return str(name) if name else ref.pack


def _check_pack_names(refs: list[TaskRef], file: Path) -> None:
    """Two tasks reporting under one pack name would be merged in every report and gate rule."""
    seen: dict[str, int] = {}
    for i, ref in enumerate(refs):
        label = report_name(ref)
        if label in seen:
            raise ConfigError(f"tasks[{seen[label]}] already reports as pack {label!r}; give this task its own "
                              f"`name:` (packs that take one, such as files) or merge the two entries",
                              file=file, path=f"tasks[{i}].name")
        seen[label] = i


def _rule(check: Callable[..., T], file: Path, *args: Any) -> T:
    """A broken runner rule (runners/config_rules.py) or a non-finite value: the ConfigError naming its key."""
    try:
        return check(*args)
    except (RuleBroken, YamlProblem) as exc:
        raise ConfigError(exc.message, file=file, path=exc.path) from None


def _check_validated_finite(config: RunConfig, file: Path) -> None:
    """Backstop for models that read a string ("inf", "nan") as a float: nothing non-finite reaches the manifest."""
    _rule(check_finite, file, config.model_dump(mode="python", exclude={"tasks"}))
    for i, task in enumerate(config.tasks):
        _rule(check_finite, file, task.params.model_dump(mode="python"), ("tasks", i))


def parse_config(data: dict[str, Any], file: Path | str = "<config>", origins: Origins | None = None) -> AnyRunConfig:
    """A merged mapping validated; with `origins` an error names the file that wrote the offending key."""
    file = Path(file)
    try:
        return _parse_config(data, file, origins or {})
    except ConfigError as exc:
        owner = origin_file(origins or {}, exc.path)
        if owner is None or exc.file is None or Path(exc.file) == owner or Path(exc.file) != file:
            raise
        raise ConfigError(exc.message, file=owner, path=exc.path) from None


def _parse_config(data: dict[str, Any], file: Path, origins: Origins) -> AnyRunConfig:
    data = dict(data)
    unknown = sorted(str(k) for k in set(data) - _TOP_KEYS)
    if unknown:
        raise ConfigError(f"unknown key; allowed: {', '.join(sorted(_TOP_KEYS))}", file=file, path=unknown[0])
    _rule(check_finite, file, data)
    data = _rule(foreign_keys, file, data)
    tasks_file = origins.get(("tasks",), file)
    tasks = _parse_tasks(data.pop("tasks", None), file, tasks_file.parent)
    data.setdefault("name", file.stem)
    if "gate" in data:
        data["gate"] = load_gate(data["gate"], file, "gate")
    runner = data.get("runner", "hf")
    model = _BY_RUNNER.get(runner) if isinstance(runner, str) else None
    if model is None:  # as pydantic words a value outside a Literal
        raise ConfigError(f"invalid value {runner!r}; allowed: {' or '.join(map(repr, _BY_RUNNER))}", file=file,
                          path="runner")
    try:
        config = model.model_validate({**data, "tasks": tasks, "source": str(file)})
    except ValidationError as exc:
        raise validation_error(exc, file, "", model) from None
    _check_validated_finite(config, file)
    asked = {t.pack for t in config.tasks}
    if config.instrument is not None and (stray := sorted(set(config.instrument.fault.packs or []) - asked)):
        raise ConfigError(f"pack {stray[0]!r} is not one of the config's tasks ({', '.join(sorted(asked))}): the "
                          "instrument would plant nothing there", file=file, path="instrument.fault.packs")
    return config


def set_path(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A copy of `data` with the value at a dotted key path set (mappings created as needed)."""
    out = copy.deepcopy(data)
    node = out
    parts = dotted.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"cannot set {dotted!r}: {part!r} is not a mapping", path=dotted)
        node = child
    node[parts[-1]] = value
    return out


def load_config_variant(path: str | Path, overrides: dict[str, Any], name: str) -> AnyRunConfig:
    """The config at `path` with dotted-key overrides and a new name (one point of a sweep)."""
    path = Path(path)
    data, origins = _resolve_with_origins(path)
    for dotted, value in overrides.items():
        data = set_path(data, dotted, value)
        parts = tuple(dotted.split("."))
        # the override wrote this value, not the ancestor that had the key: name the file given
        origins = {k: v for k, v in origins.items() if k[: len(parts)] != parts} | {parts: path}
    data["name"] = name
    return parse_config(data, file=path, origins=origins)


def ray_variant(config: RunConfig, address: str | None) -> tuple[RunConfig, str | None]:
    """`--ray [ADDRESS]` applied to one config: (the config, why it stays in process, or None).
    `address` None keeps the config's own `ray.address`."""
    if not isinstance(config, HFRunConfig):
        return config, "runner: openai: the server scales itself"
    if config.batching.mode == "continuous":
        return config, "batching.mode: continuous runs in process only"
    settings = config.ray or RaySettings()
    if address is not None:
        settings = settings.model_copy(update={"address": address})
    return config.model_copy(update={"executor": "ray", "ray": settings}), None


def load_config(path: str | Path) -> AnyRunConfig:
    """Read a config file, resolve `extends` (relative to the file) and validate it."""
    path = Path(path)
    data, origins = _resolve_with_origins(path)
    return parse_config(data, file=path, origins=origins)
