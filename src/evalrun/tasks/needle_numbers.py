"""RULER-style numeric needles at a depth in filler: exact digits, the details lossy KV methods lose first."""

from __future__ import annotations

import random
from typing import Literal

from pydantic import Field as PydField, field_validator

from evalrun.contract.types import CONTEXT_SEPARATOR, Field, Item, ItemMeta
from evalrun.tasks.base import PackParams, PackSpec, TokenCounter
from evalrun.tasks.haystack import fill

NAME = "needle_numbers"
VERSION = "1"

_KEYS = ["Lisbon", "Oslo", "Nairobi", "Quito", "Hanoi", "Tbilisi", "Valparaiso", "Tromso", "Kyoto", "Windhoek",
         "Ljubljana", "Cusco", "Zanzibar", "Reykjavik", "Marrakesh", "Tallinn", "Hobart", "Bergen", "Cordoba", "Galway"]

ValueKind = Literal["integer", "amount"]

_INTRO = (
    "Below is a long text. Somewhere in it is one important fact. "
    "Read the text and answer the question at the end."
)


DEFAULT_VALUES: tuple[ValueKind, ...] = ("integer", "amount")


class NeedleParams(PackParams):
    lengths: list[int] = PydField(default_factory=lambda: [512, 1024], min_length=1)
    depths: list[float] = PydField(default_factory=lambda: [0.0, 0.5, 1.0], min_length=1)
    values: list[ValueKind] = PydField(default_factory=lambda: list(DEFAULT_VALUES), min_length=1)

    @field_validator("lengths")
    @classmethod
    def _lengths(cls, v: list[int]) -> list[int]:
        if any(n < 64 or n > 1_000_000 for n in v):
            raise ValueError("each length must be between 64 and 1000000 tokens")
        return v

    @field_validator("depths")
    @classmethod
    def _depths(cls, v: list[float]) -> list[float]:
        if any(d < 0 or d > 1 for d in v):
            raise ValueError("each depth must be between 0.0 and 1.0")
        return v


def _needle(rng: random.Random, shape: ValueKind, key: str) -> tuple[str, str, str, str]:
    """(needle sentence, question, gold value, field type)."""
    if shape == "integer":
        value = str(rng.randint(1_000_000, 9_999_999))
        return (f"The special magic number for {key} is {value}.",
                f"What is the special magic number for {key} mentioned in the text? Answer with the number only.",
                value, "number")
    units = rng.randint(1_000, 99_999)
    cents = rng.randint(0, 99)
    shown = f"{units:,}.{cents:02d}"
    return (
        f"The outstanding balance for the {key} account is EUR {shown}.",
        f"What is the outstanding balance for the {key} account mentioned in the text? Answer with the amount only.",
        f"EUR {units}.{cents:02d}",
        "amount",
    )


def build(params: NeedleParams, count: TokenCounter) -> list[Item]:
    items: list[Item] = []
    for length in params.lengths:
        for depth in params.depths:
            for shape in params.values:
                cell = f"L{length}-D{depth:.2f}-{shape}"
                rng = random.Random(f"{NAME}:{VERSION}:{params.seed}:{cell}")
                key = rng.choice(_KEYS)
                needle, question, gold, field_kind = _needle(rng, shape, key)
                fixed = count(f"{_INTRO}\n\n{needle}\n\nQuestion: {question}")
                filler = fill(rng, length, fixed, count)
                at = round(depth * len(filler))
                text = " ".join([*filler[:at], needle, *filler[at:]])
                context, asked = f"{_INTRO}\n\n{text}", f"Question: {question}"
                prompt = context + CONTEXT_SEPARATOR + asked
                items.append(
                    Item(id=f"{NAME}/{cell}", pack=NAME, prompt=prompt, context=context, question=asked,
                         answer_format="text", fields=[Field(name="value", kind=field_kind, gold=gold)],
                         meta=ItemMeta(context_tokens=count(prompt), target_tokens=length, depth=depth,
                                       value_kind=shape, needle=needle))
                )
    return items


SPEC = PackSpec(
    name=NAME,
    version=VERSION,
    params=NeedleParams,
    build=build,
    description="Numeric needles (7-digit integers, amounts with cents) in a haystack; grid of length x depth.",
)
