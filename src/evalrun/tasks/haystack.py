"""Deterministic filler for long contexts: varied (not trivially compressible) and digit-free."""

from __future__ import annotations

import random
from typing import Iterator

from evalrun.tasks.base import TokenCounter

_SUBJECTS = [
    "The committee", "A small team", "The harbour office", "Our regional partner", "The archive staff",
    "The night shift", "A visiting engineer", "The planning group", "The village council", "The museum guide",
    "The logistics desk", "An old fisherman", "The weather station", "The audit department", "A junior analyst",
    "The school choir", "The railway crew", "The garden club", "The finance director", "The library volunteers",
]
_VERBS = ["reviewed", "postponed", "described", "inspected", "celebrated", "questioned", "reorganised", "documented",
          "painted", "repaired", "measured", "discussed", "approved", "photographed", "rearranged", "summarised"]
_OBJECTS = [
    "the northern warehouse", "the annual garden fair", "a set of faded maps", "the spring maintenance plan",
    "the wooden footbridge", "the quarterly newsletter", "the coastal walking trail", "a crate of ceramic tiles",
    "the visitor parking rules", "the new reading room", "the river crossing schedule", "the bakery delivery route",
    "the old lighthouse lamp", "the staff training notes", "a collection of winter coats", "the rooftop solar panels",
]
_TAILS = ["before the heavy rain arrived", "after a long and quiet afternoon", "without much discussion",
          "with unusual care", "while the market was closing", "in front of a curious crowd", "as the wind picked up",
          "during the weekly meeting", "under a grey and patient sky", "despite several small delays",
          "once the lights came back on", "together with their neighbours", "at the request of the mayor",
          "for the first time in years", "near the edge of the old town", "just before the holidays"]
_CONNECTORS = ["Later,", "Meanwhile,", "In the end,", "As expected,", "Surprisingly,", "Once again,", "Afterwards,", ""]


def sentences(rng: random.Random) -> Iterator[str]:
    """An endless stream of varied, digit-free sentences."""
    while True:
        connector = rng.choice(_CONNECTORS)
        subject = rng.choice(_SUBJECTS)
        if connector:
            subject = subject[0].lower() + subject[1:]
        parts = [connector, subject, rng.choice(_VERBS), rng.choice(_OBJECTS), rng.choice(_TAILS)]
        yield " ".join(p for p in parts if p) + "."


def fill(rng: random.Random, target: int, fixed_tokens: int, count: TokenCounter) -> list[str]:
    """Sentences whose token count brings a prompt of `fixed_tokens` close to `target` without passing it."""
    out: list[str] = []
    total = fixed_tokens
    for sentence in sentences(rng):
        n = count(" " + sentence)
        if total + n > target and out:
            break
        out.append(sentence)
        total += n
    return out
