"""What a task pack is: parameters in, deterministic Items out.

A pack measures context length in the model's own tokens, so it is handed a
token counter by whoever builds it; it never loads a model itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from evalrun.contract.errors import UsageError
from evalrun.contract.types import Item

TokenCounter = Callable[[str], int]


class PackParams(BaseModel):
    """Base of every pack's parameters: unknown keys are errors, a seed is always there;
    inf/nan are refused (they would reach the manifest, which is JSON)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    seed: int = 0

    def key_dump(self) -> dict[str, Any]:
        """What of these parameters enters the run key: everything that can change an item. A
        pack whose parameters say where something lies (a file's path) leaves that out and
        keys by its content instead."""
        return self.model_dump(mode="json")


class ParamError(UsageError, ValueError):
    """A parameter problem found by a pack's validator, with the key path inside the
    task (e.g. "prompt", "fields.total") so the config error points at that key."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.message = message
        self.key = key


class PackDataError(UsageError):
    """The user's data cannot become items (a document longer than the model's context):
    a configuration error of the task, found when items are built. `key` as in ParamError."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.message = message
        self.key = key


@dataclass(frozen=True)
class BuildOptions:
    """What the caller knows beyond the parameters: how many items it wants (a pack that
    reads user data builds only those, tokenizing nothing else) and how many tokens a
    prompt may have (the model's context less the answer's room; None: unknown)."""

    limit: int | None = None
    max_prompt_tokens: int | None = None


P = TypeVar("P", bound="PackParams")  # a pack's own parameters


@dataclass(frozen=True)
class PackSpec(Generic[P]):
    """A registered pack. `version` changes whenever the items it builds would.

    `build(params, count)` builds every item; a pack that can honour BuildOptions
    itself also gives `build_with(params, count, options)`. Callers use `items()`."""

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
