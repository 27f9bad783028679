"""ConfigErrors from a pydantic validation error and from an unreadable YAML file; apart from config.py so
the gate's loaders, which config.py calls, can use them without importing config.py back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from evalrun.contract.errors import ConfigError
from evalrun.evals.files._yaml import YamlProblem, load_strict
from evalrun.contract.user_files import MAX_YAML_BYTES, FileRefused, read_bounded
from evalrun.contract.validation import first_error


def read_yaml(path: Path, named_by: tuple[Path, str] | None = None) -> dict[str, Any]:
    """One YAML file (a config or a gate file) as a mapping, strictly (load_strict, read_bounded).
    `named_by`: the (file, key) that named this one, which a refused file is reported at."""
    if not path.exists():
        raise ConfigError("file not found", file=path)
    try:
        data = load_strict(read_bounded(path, MAX_YAML_BYTES).decode("utf-8"))
    except FileRefused as exc:
        if named_by:
            raise ConfigError(f"{path} {exc}", file=named_by[0], path=named_by[1]) from None
        raise ConfigError(str(exc), file=path) from None
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


def validation_error(exc: ValidationError, file: Path | str, prefix: str, model: type[BaseModel]) -> ConfigError:
    """The first pydantic error as a ConfigError naming the full key path."""
    loc, message = first_error(exc, model)
    return ConfigError(message, file=file, path=".".join(p for p in (prefix, loc) if p))


__all__ = ["ConfigError", "read_yaml", "validation_error"]
