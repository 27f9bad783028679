"""The contract between the stages: tasks make Items, runners make Generations,
evals score them into FieldScores.

Plain pydantic models so that every stage can serialise them to the run store
and read them back without knowing who wrote them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field as PydField

FieldKind = Literal["amount", "number", "date", "id", "text", "enum"]

# Field-level outcomes; "error" is the item-level outcome of a generation that raised.
Outcome = Literal[
    "correct",
    "near_match",
    "partial",
    "wrong_value",
    "missing",
    "hallucinated",
    "correct_absent",
    "error",
]

# Outcomes credited as correct in strict scoring.
CORRECT_OUTCOMES: frozenset[str] = frozenset({"correct", "correct_absent"})


class Field(BaseModel):
    """One typed reference value an item asks for; gold None marks a decoy the
    document does not contain."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: FieldKind
    gold: str | None
    options: dict[str, Any] = PydField(default_factory=dict)


class Item(BaseModel):
    """One prompt with its typed reference fields; deterministic for a pack's
    parameters so two runs can be paired by id."""

    model_config = ConfigDict(extra="forbid")

    id: str
    pack: str
    prompt: str
    system: str | None = None
    fields: list[Field]
    meta: dict[str, Any] = PydField(default_factory=dict)

    @property
    def prompt_hash(self) -> str:
        """Hash of the question as asked (system + user text), independent of any
        chat template, so runs of different models still pair."""
        payload = json.dumps([self.system, self.prompt], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


class Generation(BaseModel):
    """What a runner produced for one item: one line of samples.jsonl."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    pack: str
    prompt_hash: str
    output: str | None = None
    # generated token ids, so agreement can report the first divergent token
    output_ids: list[int] | None = None
    error: str | None = None
    prompt_tokens: int = 0
    new_tokens: int = 0
    # wall seconds of the whole call; shared by the batch's items when batch_size > 1
    seconds: float = 0.0
    batch_size: int = 1
    # time to first token (prefill) and the rest of the call (decode), both measured
    # for the whole batch when batch_size > 1; None where the runner could not time them
    prefill_seconds: float | None = None
    decode_seconds: float | None = None


class FieldScore(BaseModel):
    """The single outcome of one field, with the normalised values that led to it."""

    model_config = ConfigDict(extra="forbid")

    outcome: Outcome
    subcode: str | None = None
    gold_norm: str | None = None
    pred_norm: str | None = None
    detail: str | None = None
