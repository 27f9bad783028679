"""Fixed-shape prompts for measuring speed without accuracy noise: each item generates exactly its output
length (EOS ignored) and has no fields. Presets `short` (200 in, 300 out) and `long` (2,000 in, 1,000 out),
or {name, input_tokens, output_tokens}; filler drawn per item so no two items share a prefix."""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field as PydField, field_validator

from evalrun.contract.types import GenerationOverride, Item, ItemMeta
from evalrun.tasks.base import PackParams, PackSpec, TokenCounter
from evalrun.tasks.haystack import fill

NAME = "latency"
VERSION = "1"

_INSTRUCTION = "Read the notes below, then continue them with more notes in the same style."


class LatencyShape(BaseModel):
    """One prompt/output shape."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = PydField(pattern=r"^[A-Za-z0-9_.-]+$")
    input_tokens: int = PydField(ge=32, le=1_000_000)
    output_tokens: int = PydField(ge=1, le=100_000)


PRESETS: dict[str, LatencyShape] = {"short": LatencyShape(name="short", input_tokens=200, output_tokens=300),
                                    "long": LatencyShape(name="long", input_tokens=2000, output_tokens=1000)}


_DEFAULT_SHAPES: tuple[Literal["short", "long"] | LatencyShape, ...] = ("short",)


class LatencyParams(PackParams):
    shapes: list[Literal["short", "long"] | LatencyShape] = PydField(default_factory=lambda: list(_DEFAULT_SHAPES), min_length=1)
    count: int = PydField(default=4, ge=1, le=10_000, description="items per shape")

    @field_validator("shapes")
    @classmethod
    def _unique(cls, v: list[str | LatencyShape]) -> list[str | LatencyShape]:
        names = [_shape(s).name for s in v]
        if len(set(names)) != len(names):
            raise ValueError(f"shape names must be unique, got {names}")
        return v


def _shape(s: str | LatencyShape) -> LatencyShape:
    return PRESETS[s] if isinstance(s, str) else s


def _prompt(rng: random.Random, target: int, count: TokenCounter) -> str:
    """The instruction and notes whose token count comes close to `target` without passing it."""
    text = _INSTRUCTION + "\n\n"
    return text + " ".join(fill(rng, target, count(text), count))


def build(params: LatencyParams, count: TokenCounter) -> list[Item]:
    items: list[Item] = []
    for spec in params.shapes:
        shape = _shape(spec)
        override = GenerationOverride(max_new_tokens=shape.output_tokens, ignore_eos=True)
        for i in range(params.count):
            rng = random.Random(f"{NAME}:{VERSION}:{params.seed}:{shape.name}:{shape.input_tokens}:{i}")
            prompt = _prompt(rng, shape.input_tokens, count)
            items.append(Item(id=f"{NAME}/{shape.name}-{i}", pack=NAME, prompt=prompt, fields=[], generation=override,
                              meta=ItemMeta(context_tokens=count(prompt), target_tokens=shape.input_tokens,
                                            shape=shape.name, output_tokens=shape.output_tokens)))
    return items


SPEC = PackSpec(
    name=NAME,
    version=VERSION,
    params=LatencyParams,
    build=build,
    description="Speed only: fixed-shape prompts (short ~200 in/300 out, long ~2000 in/1000 out, or your own) "
                "that always generate their full output length (end-of-sequence ignored); no fields scored.",
)
