"""Loading and validating configuration YAML.

Every way a config can be wrong ends in one ConfigError that names the file,
the key path and what is allowed, so the CLI can print one line and exit 2
instead of a traceback.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evals.gate import GateConfig, load_gate
from runners.accel import validate_accelerations
from runners.accel.base import model_at
from runners.openai import EngineInfo, OpenAISettings
from tasks import get_pack
from tasks.base import PackParams


class ConfigError(Exception):
    """A user-facing configuration problem: file, key path, what is allowed."""

    def __init__(self, message: str, file: str | Path | None = None, path: str | None = None):
        self.file = str(file) if file is not None else None
        self.path = path
        where = ""
        if self.file:
            where = f"{self.file}: "
        if path:
            where += f"{path}: "
        super().__init__(f"{where}{message}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GenerationSettings(_Strict):
    """Decoding settings; greedy unless a temperature above 0 is asked for."""

    max_new_tokens: int = Field(48, ge=1, le=32768)
    temperature: float = Field(0.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int = 0


class TaskRef(_Strict):
    """One pack with its validated parameters."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    pack: str
    params: PackParams


class RunConfig(_Strict):
    """One serving configuration: model, runner, acceleration, decoding and tasks.

    With `runner: openai`, `model` is the name the server serves, `openai:` says
    how to reach it and `engine:` records the flags it was started with; the
    hf-only keys (device, dtype, batch_size) are ignored there."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    model: str = "smollm2-135m"
    runner: Literal["hf", "openai"] = "hf"
    openai: OpenAISettings | None = None
    engine: EngineInfo | None = None
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    # "auto": the largest batch that fits (estimated from free accelerator memory; 8 on the CPU),
    # halved on out-of-memory with the batch retried, so nothing is lost
    batch_size: int | Literal["auto"] = 4
    # compute a document's KV once for all the questions asked about it (items whose text
    # before `meta["question"]` is the same); off by default: it changes the batch shapes
    prefix_reuse: bool = False
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    acceleration: dict[str, Any] = Field(default_factory=dict)
    tasks: list[TaskRef]
    # rules this config is gated by when it is a candidate; never part of the cache key
    gate: GateConfig | None = None
    source: str = ""

    @field_validator("batch_size", mode="before")
    @classmethod
    def _batch_size(cls, value: Any) -> Any:
        if value == "auto":
            return value
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024:
            raise ValueError(f"must be an integer from 1 to 1024 or 'auto' (got {value!r})")
        return value

    def tasks_dump(self) -> list[dict[str, Any]]:
        return [{"pack": t.pack, **t.params.model_dump(mode="json")} for t in self.tasks]


_TOP_KEYS = set(RunConfig.model_fields) - {"source"} | {"extends"}


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError("file not found", file=path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"YAML syntax error{line}: {problem}", file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read file: {exc}", file=path) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping of keys at the top level, got {type(data).__name__}", file=path)
    return data


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge mappings; lists and scalars in `over` replace those in `base`."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _resolve_extends(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    path = path.resolve()
    if path in seen:
        chain = " -> ".join(str(p) for p in (*seen, path))
        raise ConfigError(f"circular extends: {chain}", file=path, path="extends")
    data = _read_yaml(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str):
        raise ConfigError("must be a path to another config file", file=path, path="extends")
    parent_path = (path.parent / parent)
    if not parent_path.exists():
        raise ConfigError(f"extended file not found: {parent_path}", file=path, path="extends")
    return _merge(_resolve_extends(parent_path, (*seen, path)), data)


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _pydantic_message(err: dict[str, Any], model: type[BaseModel] | None = None) -> str:
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        allowed = ""
        if model is not None:
            allowed = f"; allowed: {', '.join(sorted(model.model_fields))}"
        return f"unknown key{allowed}"
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        return f"invalid value {err.get('input')!r}; allowed: {err.get('ctx', {}).get('expected', '')}"
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if kind == "value_error" or isinstance(err.get("input"), (dict, list)):
        return msg
    return f"{msg} (got {err.get('input')!r})"


def validation_error(exc: ValidationError, file: Path | str, prefix: str, model: type[BaseModel]) -> ConfigError:
    """Turn the first pydantic error into a ConfigError naming the full key path."""
    err = exc.errors()[0]
    loc = tuple(err.get("loc", ()))
    owner = model_at(model, loc[:-1]) if err.get("type") == "extra_forbidden" else None
    path = ".".join(p for p in (prefix, _loc(loc)) if p)
    return ConfigError(_pydantic_message(err, owner), file=file, path=path)


def _parse_tasks(raw: Any, file: Path) -> list[TaskRef]:
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
            refs.append(TaskRef(pack=spec.name, params=spec.params.model_validate(params, context={"base_dir": file.parent})))
        except ValidationError as exc:
            raise validation_error(exc, file, where, spec.params) from None
    return refs


def _check_runner_keys(data: dict[str, Any], file: Path) -> None:
    """Keys that belong to the other runner are mistakes worth one clear line, not silent no-ops."""
    runner = data.get("runner", "hf")
    if runner == "openai":
        if not data.get("openai"):
            raise ConfigError("runner: openai needs an `openai:` mapping with at least base_url "
                              "(e.g. openai: {base_url: http://127.0.0.1:8000/v1})", file=file, path="openai")
        if data.get("acceleration"):
            raise ConfigError("accelerations are applied by the hf runner; with runner: openai the engine applies them: "
                              "start the server with its flags (e.g. vLLM --kv-cache-dtype fp8) and record them under "
                              "engine: {name: vllm, args: [...]}", file=file, path="acceleration")
    elif runner == "hf":
        for key in ("openai", "engine"):
            if data.get(key) is not None:
                raise ConfigError("only used with runner: openai (this config's runner is hf)", file=file, path=key)


def parse_config(data: dict[str, Any], file: Path | str = "<config>") -> RunConfig:
    """Validate an already-merged mapping into a RunConfig."""
    file = Path(file)
    data = dict(data)
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ConfigError(f"unknown key; allowed: {', '.join(sorted(_TOP_KEYS))}", file=file, path=unknown[0])
    _check_runner_keys(data, file)
    tasks = _parse_tasks(data.pop("tasks", None), file)
    accel_raw = data.pop("acceleration", None) or {}
    if not isinstance(accel_raw, dict):
        raise ConfigError("must be a mapping of method -> settings", file=file, path="acceleration")
    try:
        accel = validate_accelerations(accel_raw)
    except ValidationError as exc:
        raise ConfigError(str(exc), file=file, path="acceleration") from None
    except ValueError as exc:
        path, _, msg = str(exc).partition(": ")
        raise ConfigError(msg or path, file=file, path=f"acceleration.{path}" if msg else "acceleration") from None
    data.setdefault("name", file.stem)
    if "gate" in data:
        data["gate"] = load_gate(data["gate"], file, "gate")
    try:
        return RunConfig.model_validate({**data, "tasks": tasks, "acceleration": accel, "source": str(file)})
    except ValidationError as exc:
        raise validation_error(exc, file, "", RunConfig) from None


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


def load_config_variant(path: str | Path, overrides: dict[str, Any], name: str) -> RunConfig:
    """The config at `path` with dotted-key overrides and a new name (one point of a sweep)."""
    path = Path(path)
    data = _resolve_extends(path)
    for dotted, value in overrides.items():
        data = set_path(data, dotted, value)
    data["name"] = name
    return parse_config(data, file=path)


def load_config(path: str | Path) -> RunConfig:
    """Read a config file, resolve `extends` (relative to the file) and validate it."""
    path = Path(path)
    return parse_config(_resolve_extends(path), file=path)
