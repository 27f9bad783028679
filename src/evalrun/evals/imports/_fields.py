"""Which imported tasks the typed scorer reads instead of the source's own per-sample metric (docs/imports.md):
a `fields:` mapping or `--field TASK=KIND` gives a team's extraction task the sub-codes (digit_dropped,
day_month_swap) and the default harmful-flip limits::

    fields:
      arith: number                 # task -> type
      invoices: {type: amount, name: total, options: {decimal: ","}}
      "*": id                       # every other task
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field as PydField, PrivateAttr, ValidationError, model_validator

from evalrun.contract.types import Field
from evalrun.evals.files import ConfigError, read_yaml, validation_error
from evalrun.tasks.base import ParamError
from evalrun.values.registry import KINDS, FieldSpec, user_option_problem

ANY_TASK = "*"


class TaskField(FieldSpec):
    """The typed field one task's target becomes."""

    name: str = PydField(default="answer", min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _kind(cls, data: Any) -> Any:
        """`kind:` is the older spelling of `type:`, still read; both at once is an error."""
        if isinstance(data, dict) and "kind" in data:
            if "type" in data:
                raise ValueError("give the field's type once: `type:` (`kind:` is its older spelling)")
            data = {("type" if k == "kind" else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _options(self) -> "TaskField":
        """An option the scorer does not (or cannot) read is an error here, not when an item is scored."""
        if (problem := user_option_problem(self.type, self.options)) is not None:
            raise ParamError(problem[1], f"options.{problem[0]}")
        return self


class FieldMap(BaseModel):
    """Task (or "*") -> the typed field its target is scored as."""

    model_config = ConfigDict(extra="forbid")

    fields: dict[str, TaskField] = PydField(default_factory=dict)
    _where: str = PrivateAttr(default="--field")

    def spec(self, task: str) -> TaskField | None:
        return self.fields.get(task) or self.fields.get(ANY_TASK)

    def typed_field(self, task: str, target: str | None) -> Field | None:
        """The task's typed field with the target as its gold, or None: the source's metric decides."""
        spec = self.spec(task)
        if spec is None:
            return None
        return Field(name=spec.name, kind=spec.type, gold=target, options=spec.options)

    def check_tasks(self, tasks: set[str]) -> None:
        """A mapping naming a task the logs do not hold is a typo, not a rule quietly unused."""
        unknown = sorted(set(self.fields) - tasks - {ANY_TASK})
        if unknown:
            raise ConfigError(f"no task {unknown[0]!r} in the imported logs (they hold: {', '.join(sorted(tasks))})",
                              file=self._where, path=f"fields.{unknown[0]}")


def _normal(data: Any) -> Any:
    """A bare type (`arith: number`) is short for {type: number}."""
    if isinstance(data, dict) and isinstance(data.get("fields"), dict):
        return {**data, "fields": {k: {"type": v} if isinstance(v, str) else v for k, v in data["fields"].items()}}
    return data


def load_field_map(path: str | Path | None = None, pairs: list[str] | None = None) -> FieldMap:
    """The mapping from a YAML file (`fields:` at the top) and `TASK=TYPE` pairs (which win)."""
    data: dict[str, Any] = {"fields": {}}
    if path is not None:
        raw = read_yaml(Path(path))
        if set(raw) - {"fields"}:
            extra = sorted(set(raw) - {"fields"})[0]
            raise ConfigError("unknown key; a fields file holds `fields:` (task -> type)", file=path, path=extra)
        data = _normal(raw) if raw else data
    where = str(path) if path is not None else "--field"
    try:
        mapping = FieldMap.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, where, "", FieldMap) from None
    for pair in pairs or []:
        task, sep, kind = pair.partition("=")
        if not sep or not task.strip() or kind.strip() not in KINDS:
            raise ConfigError(f"expected TASK=KIND with KIND one of {', '.join(KINDS)}, got {pair!r}",
                              path="--field")
        mapping.fields[task.strip()] = TaskField(type=kind.strip())
    mapping._where = f"{where} / --field" if pairs and path is not None else where
    return mapping
