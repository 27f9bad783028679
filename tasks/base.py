"""What a task pack is: parameters in, deterministic Items out.

A pack measures context length in the model's own tokens, so it is handed a
token counter by whoever builds it; it never loads a model itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pydantic import BaseModel, ConfigDict

from evals.types import Item

TokenCounter = Callable[[str], int]


class PackParams(BaseModel):
    """Base of every pack's parameters: unknown keys are errors, a seed is always there;
    inf/nan are refused (they would reach the manifest, which is JSON)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    seed: int = 0


@dataclass(frozen=True)
class PackSpec:
    """A registered pack. `version` changes whenever the items it builds would."""

    name: str
    version: str
    params: type[PackParams]
    build: Callable[[PackParams, TokenCounter], list[Item]]
    description: str = ""
