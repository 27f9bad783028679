"""A config's `acceleration:` block as one typed value: method name -> that method's own settings model.

Each value is validated by the settings model the registry holds for its key; the mapping keeps the
config's order and carries the settings instances themselves to the runner.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from pydantic import RootModel, SerializeAsAny, ValidationError, model_validator

from evalrun.contract.validation import KeyedError, first_error
from evalrun.runners.accel.base import AccelSettings, Acceleration
from evalrun.runners.accel.registry import all_methods


class Accelerations(RootModel[dict[str, SerializeAsAny[AccelSettings]]]):
    """`acceleration: {kv_cache: {quant: int4}}`: each method's validated settings, by its config key.
    Dumped (mode="json") it is the mapping every stored manifest and run key has always held.
    None at all is `Accelerations.none()`."""

    root: dict[str, SerializeAsAny[AccelSettings]] = {}

    @model_validator(mode="before")
    @classmethod
    def _by_method(cls, raw: Any) -> Any:
        if isinstance(raw, Accelerations):
            return raw.root
        if raw is None:  # `acceleration: null`: none
            return {}
        if not isinstance(raw, dict):
            raise ValueError("must be a mapping of method -> settings")
        methods = all_methods()
        out: dict[str, AccelSettings] = {}
        for name, settings in raw.items():
            if name not in methods:
                raise KeyedError(f"unknown acceleration; available: {', '.join(sorted(methods))}", key=str(name))
            model = methods[name].settings_model
            if isinstance(settings, model):
                out[name] = settings
                continue
            if settings is None:
                settings = {}
            if not isinstance(settings, dict):
                raise KeyedError("must be a mapping of settings", key=str(name))
            try:
                out[name] = model.model_validate(settings)
            except ValidationError as exc:
                loc, message = first_error(exc, model, show_input=False)
                raise KeyedError(message, key=f"{name}.{loc}" if loc else str(name)) from None
        return out

    @classmethod
    def none(cls) -> Accelerations:
        return cls({})

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]  # a mapping iterates its keys
        return iter(self.root)

    def __getitem__(self, name: str) -> AccelSettings:
        return self.root[name]

    def __contains__(self, name: object) -> bool:
        return name in self.root

    def __len__(self) -> int:
        return len(self.root)

    def __bool__(self) -> bool:
        return bool(self.root)

    def items(self) -> Iterator[tuple[str, AccelSettings]]:
        return iter(self.root.items())

    def names(self) -> list[str]:
        return list(self.root)


def validate_accelerations(raw: Any) -> Accelerations:
    """Raises ValueError("<key path>: <message>") for callers outside a pydantic model."""
    try:
        return Accelerations.model_validate(raw)
    except ValidationError as exc:
        loc, message = first_error(exc, Accelerations)
        raise ValueError(f"{loc}: {message}" if loc else message) from None


def build_accelerations(settings: Accelerations | Mapping[str, Any]) -> list[Acceleration]:
    """Instantiate the validated methods of one run, in a stable order, each with its settings instance."""
    typed = settings if isinstance(settings, Accelerations) else Accelerations.model_validate(settings)
    methods = all_methods()
    return [methods[name](s) for name, s in sorted(typed.items())]
