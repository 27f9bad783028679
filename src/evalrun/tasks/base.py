"""What a task pack is: parameters in, deterministic Items out, lengths counted in the model's own tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from evalrun.contract.errors import UsageError
from evalrun.contract.types import Item

TokenCounter = Callable[[str], int]


class PackParams(BaseModel):
    """Base of every pack's parameters: unknown keys are errors; inf/nan refused (the manifest is JSON)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    seed: int = 0

    def key_dump(self) -> dict[str, Any]:
        """What enters the run key: all that can change an item; a pack locating data (a path) keys by its content."""
        return self.model_dump(mode="json")


class _KeyedError(UsageError):
    """A task config error with its key path in the task ("fields.total"), so the config error points there."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.message = message
        self.key = key


class ParamError(_KeyedError, ValueError):
    """A parameter problem, found while the parameters are validated."""


class PackDataError(_KeyedError):
    """The user's data cannot become items (a document over the context): a task config error found at build time."""


@dataclass(frozen=True)
class BuildOptions:
    """What the caller knows beyond the parameters: the items wanted and a prompt's token room (None: unknown)."""

    limit: int | None = None
    max_prompt_tokens: int | None = None


P = TypeVar("P", bound="PackParams")  # a pack's own parameters


@dataclass(frozen=True)
class PackSpec(Generic[P]):
    """A registered pack; `version` changes whenever its items would. Callers use `items()`."""

    name: str
    version: str
    params: type[P]
    build: Callable[[P, TokenCounter], list[Item]]
    description: str = ""
    build_with: Callable[[P, TokenCounter, BuildOptions], list[Item]] | None = None

    def items(self, params: P, count: TokenCounter, options: BuildOptions | None = None) -> list[Item]:
        """The first `options.limit` items (all without a limit), checked against the context where the pack can."""
        options = options or BuildOptions()
        if self.build_with is not None:
            return self.build_with(params, count, options)
        built = self.build(params, count)
        return built[: options.limit] if options.limit else built
