"""The contract between the stages: tasks make Items, runners make Generations,
evals score them into FieldScores.

Plain pydantic models so that every stage can serialise them to the run store
and read them back without knowing who wrote them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field as PydField, computed_field, model_validator

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


class GenerationOverride(BaseModel):
    """An item's own output length, for packs that measure speed at a fixed shape
    (`latency`): runners generate exactly `max_new_tokens` when `ignore_eos`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_new_tokens: int = PydField(ge=1, le=100_000)
    ignore_eos: bool = False


class Item(BaseModel):
    """One prompt with its typed reference fields; deterministic for a pack's
    parameters so two runs can be paired by id. An item without fields is
    measured for speed only."""

    model_config = ConfigDict(extra="forbid")

    id: str
    pack: str
    prompt: str
    system: str | None = None
    fields: list[Field]
    meta: dict[str, Any] = PydField(default_factory=dict)
    # replaces the run's generation length for this item (None: the run's settings)
    generation: GenerationOverride | None = None

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
    # time to first token (prefill), and from the first token to this item's last one
    # (decode); in a shared batch (batch_size > 1) the steps are the batch's. None where
    # the runner could not time them (older runs, a backend without streaming).
    prefill_seconds: float | None = None
    decode_seconds: float | None = None

    # Derived figures, written to samples.jsonl for readers and recomputed (never
    # trusted) when a line is read back, so every runner gets them the same way.
    # The first token is the prefill's; decode produces the other new_tokens - 1.

    @computed_field  # type: ignore[prop-decorator]
    @property
    def decode_tokens_per_second(self) -> float | None:
        """Decode speed of this sequence: (new_tokens - 1) / decode_seconds."""
        if self.decode_seconds is None or self.decode_seconds <= 0 or self.new_tokens < 2:
            return None
        return round((self.new_tokens - 1) / self.decode_seconds, 4)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def decode_seconds_per_token(self) -> float | None:
        """Per-token (inter-token) latency during decode."""
        if self.decode_seconds is None or self.decode_seconds <= 0 or self.new_tokens < 2:
            return None
        return round(self.decode_seconds / (self.new_tokens - 1), 6)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def batch_shared(self) -> bool:
        """True when the timings are a batch's, shared with other items."""
        return self.batch_size > 1

    @model_validator(mode="before")
    @classmethod
    def _drop_derived(cls, data: Any) -> Any:
        if isinstance(data, dict) and not _DERIVED.isdisjoint(data):
            return {k: v for k, v in data.items() if k not in _DERIVED}
        return data


_DERIVED = frozenset({"decode_tokens_per_second", "decode_seconds_per_token", "batch_shared"})


class FieldScore(BaseModel):
    """The single outcome of one field, with the normalised values that led to it."""

    model_config = ConfigDict(extra="forbid")

    outcome: Outcome
    subcode: str | None = None
    gold_norm: str | None = None
    pred_norm: str | None = None
    detail: str | None = None
