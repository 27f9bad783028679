"""The one error every configuration problem ends in, and the two common ways to
make one: from a pydantic validation error, and from a YAML file that cannot be
read. Kept apart from config.py so the gate's loaders (evals/gate.py), which
config.py itself calls, can raise it without importing config.py back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import BaseModel, ValidationError

from evalrun.evals.yaml_load import YamlProblem, load_strict
from evalrun.runners.accel.base import model_at


class ConfigError(Exception):
    """A user-facing configuration problem: file, key path, what is allowed."""

    def __init__(self, message: str, file: str | Path | None = None, path: str | None = None):
        self.message = message
        self.file = str(file) if file is not None else None
        self.path = path
        where = ""
        if self.file:
            where = f"{self.file}: "
        if path:
            where += f"{path}: "
        super().__init__(f"{where}{message}")


def read_yaml(path: Path) -> dict[str, Any]:
    """One YAML file as a mapping; duplicate keys and non-finite numbers are ConfigErrors.
    (A config and a gate file are read alike.)"""
    if not path.exists():
        raise ConfigError("file not found", file=path)
    try:
        data = load_strict(path.read_text(encoding="utf-8"))
    except YamlProblem as exc:
        raise ConfigError(exc.message, file=path, path=exc.path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"YAML syntax error{line}: {problem}", file=path) from None
    except RecursionError:
        raise ConfigError("YAML nested too deeply", file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read file: {exc}", file=path) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping of keys at the top level, got {type(data).__name__}", file=path)
    return data


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _pydantic_message(err: Mapping[str, Any], model: type[BaseModel] | None = None) -> str:
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
    key = getattr((err.get("ctx") or {}).get("error"), "key", None)
    if key:  # a validator that knows which key is wrong (tasks.base.ParamError)
        loc = (*loc, *key.split("."))
    owner = model_at(model, loc[:-1]) if err.get("type") == "extra_forbidden" else None
    path = ".".join(p for p in (prefix, _loc(loc)) if p)
    return ConfigError(_pydantic_message(err, owner), file=file, path=path)


__all__ = ["ConfigError", "read_yaml", "validation_error"]
