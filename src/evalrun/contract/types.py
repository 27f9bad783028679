"""Tasks make Items, runners make Generations, evals score them into FieldScores: plain pydantic
models, so every stage serialises them to the run store and reads them back without knowing the writer."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, Union, get_args

from typing_extensions import TypedDict

from pydantic import BaseModel, ConfigDict, Field as PydField, computed_field, model_serializer, model_validator

from evalrun.contract.manifest import MachineLoad

# A field type's name: the types live in values/types/, which the contract cannot import, so the name
# is checked against their registry where configs, imports and gates are read.
FieldKind = str

# Field-level outcomes; "error" is the item-level outcome of a generation that raised.
# The one list of outcomes: the scorer, the metrics and the report's browser read it from here.
Outcome = Literal[
    "correct", "correct_absent", "near_match", "partial", "wrong_value", "missing", "hallucinated", "error",
]
OUTCOMES: tuple[str, ...] = get_args(Outcome)
# what the scorer gives a field of an answer that was generated (everything but "error")
FIELD_OUTCOMES: tuple[str, ...] = tuple(o for o in OUTCOMES if o != "error")

# Outcomes credited as correct in strict scoring.
CORRECT_OUTCOMES: frozenset[str] = frozenset({"correct", "correct_absent"})


def flip(baseline: str, candidate: str) -> int:
    """1 a harmful flip (right at baseline, not in the candidate), -1 a helpful one, 0 neither:
    the one definition the gate, the field table and the item browser count."""
    b, c = baseline in CORRECT_OUTCOMES, candidate in CORRECT_OUTCOMES
    return int(b and not c) - int(c and not b)


class Field(BaseModel):
    """One typed reference value an item asks for; gold None marks a decoy the document does not contain."""

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


# What stands between an item's context (the document) and its question in the prompt.
CONTEXT_SEPARATOR = "\n\n"


class FieldPlace(TypedDict):
    """Where one asked field's value sits in a JSON-mode document (None: a decoy)."""

    depth: float | None
    source: str | None


class Distractor(TypedDict):
    """A near-miss sentence placed in a document, at a relative depth."""

    kind: str
    depth: float
    sentence: str


class Truncation(TypedDict):
    """What the files pack cut from a row to fit the model's context."""

    column: str
    chars_kept: int
    chars: int


# Keys that are Item fields now; a meta dict carrying them is a legacy item (see Item._legacy).
_ITEM_LEVEL_KEYS = frozenset({"context", "question", "answer_format"})


class ItemMeta(BaseModel):
    """Facts about an item that later stages slice, highlight and trace by. Sparse: only the keys a pack
    set are stored (`"truncated" in meta` means what it meant when meta was a dict); a pack may add its own."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    # length: the prompt's tokens as built, and the length the pack aimed at
    context_tokens: int | None = None
    target_tokens: int | None = None
    # relative depth (0..1) of the needle, or of the one asked field's source sentence
    depth: float | None = None
    field_depth: float | None = None
    # needle_numbers
    needle: str | None = None
    value_kind: str | None = None
    # doc_fields
    doc_id: str | None = None
    doc_type: str | None = None
    mode: str | None = None
    field: str | None = None
    decoy: bool | None = None
    source: str | None = None
    amount_style: str | None = None
    date_style: str | None = None
    fields: dict[str, FieldPlace] | None = None
    distractors: list[Distractor] | None = None
    # files
    row: int | None = None
    truncated: Truncation | None = None
    # latency
    shape: str | None = None
    output_tokens: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_item_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and not _ITEM_LEVEL_KEYS.isdisjoint(data):
            keys = ", ".join(sorted(_ITEM_LEVEL_KEYS & set(data)))
            raise ValueError(f"{keys}: an Item field, not metadata")
        return data

    @model_serializer(mode="wrap")
    def _sparse(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self.model_fields_set else default

    def __getitem__(self, key: str) -> Any:
        if key not in self.model_fields_set:
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self.model_fields_set


class Item(BaseModel):
    """One prompt with its typed reference fields (none: measured for speed only), deterministic for a
    pack's parameters so two runs pair by id. `prompt == context + CONTEXT_SEPARATOR + question` for an
    item about a document, so a runner can prefill the document alone (query-agnostic KV compression,
    shared prefixes) without guessing where it ends; a bare question has `question == prompt`."""

    model_config = ConfigDict(extra="forbid")

    id: str
    pack: str
    prompt: str
    system: str | None = None
    context: str | None = None
    question: str | None = None
    # how the answer is read: free text with typed candidates, or one JSON object (None: nothing scored)
    answer_format: Literal["text", "json"] | None = None
    fields: list[Field]
    meta: ItemMeta = PydField(default_factory=ItemMeta)
    # replaces the run's generation length for this item (None: the run's settings)
    generation: GenerationOverride | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        """Items stored before context/question/answer_format were fields kept `question` and `answer_format` in
        meta; upgraded once, here. The stored question splits the prompt only where the prompt ends with it after
        the separator (the one suffix match allowed: it reads what old packs wrote, never a new item); else it is
        dropped. A missing answer_format is "text" for an item with fields (what the scorer assumed)."""
        if not isinstance(data, dict) or not isinstance(data.get("meta"), dict):
            return data
        meta = data["meta"]
        if _ITEM_LEVEL_KEYS.isdisjoint(meta) or not _ITEM_LEVEL_KEYS.isdisjoint(data):
            return data
        meta = dict(meta)
        question = meta.pop("question", None)
        answer_format = meta.pop("answer_format", None)
        meta.pop("context", None)
        out = {**data, "meta": meta}
        prompt = data.get("prompt")
        if isinstance(question, str) and question and isinstance(prompt, str):
            tail = CONTEXT_SEPARATOR + question
            if prompt == question:
                out["question"] = question
            elif prompt.endswith(tail) and len(prompt) > len(tail):
                out["context"], out["question"] = prompt[: -len(tail)], question
        if answer_format is None and data.get("fields"):
            answer_format = "text"
        out["answer_format"] = answer_format
        return out

    @model_validator(mode="after")
    def _prompt_relation(self) -> Item:
        if self.context is not None:
            if self.question is None:
                raise ValueError("an item with a context needs its question")
            if self.prompt != self.context + CONTEXT_SEPARATOR + self.question:
                raise ValueError("prompt must be context + CONTEXT_SEPARATOR + question")
        elif self.question is not None and self.prompt != self.question:
            raise ValueError("an item with a question and no context must have prompt == question")
        return self

    @property
    def prompt_hash(self) -> str:
        """Hash of the question as asked (system + user text), independent of any
        chat template, so runs of different models still pair."""
        payload = json.dumps([self.system, self.prompt], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


# one per-sample metric value as another harness logged it: 1.0, true, "C", a list or mapping it kept
SourceValue = Union[bool, int, float, str, None, list[Any], dict[str, Any]]


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
    # Unix time when the request was sent (openai) or its batch started (hf): the run's wall
    # clock is the union of [started_at, started_at + seconds] (throughput, goodput rate)
    started_at: float | None = None
    # gaps between this sequence's successive output chunks after the first (a streamed chunk,
    # or a decoding step that gave it tokens): vLLM's ITL, which several tokens per chunk
    # (speculative decoding) make longer than TPOT; None where not recorded (older runs)
    itl_seconds: list[float] | None = None
    # why the answer ended, as the engine said: "stop" (the model ended it), "length" (max_new_tokens
    # reached: a cut-off that can cost a field), others a server names (runners/openai/_answer.py);
    # None where not recorded (older runs) or on an error
    finish_reason: str | None = None
    # an imported run's (evalrun import): the source harness's own per-sample metric values by name
    # (lm-eval's `exact_match,strip`, an Inspect scorer's value), read by a field with `source_metric`
    source_scores: dict[str, SourceValue] | None = None

    # Derived figures, written to samples.jsonl for readers and recomputed (never trusted) when a line is read back, so
    # every runner gets them the same way. The first token is the prefill's; decode produces the other new_tokens - 1.

    @computed_field  # type: ignore[prop-decorator]
    @property
    def decode_tokens_per_second(self) -> float | None:
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
        return self.batch_size > 1

    @model_validator(mode="before")
    @classmethod
    def _drop_derived(cls, data: Any) -> Any:
        if isinstance(data, dict) and not _DERIVED.isdisjoint(data):
            return {k: v for k, v in data.items() if k not in _DERIVED}
        return data


_DERIVED = frozenset({"decode_tokens_per_second", "decode_seconds_per_token", "batch_shared"})


class Reask(BaseModel):
    """One re-ask of a flipped item to confirm the flip (a line of confirmations.jsonl): which
    attempt, the batch it ran in, and the generation itself, kept apart from the run's samples."""

    model_config = ConfigDict(extra="forbid")

    attempt: int = PydField(ge=1)
    batch_size: int = PydField(ge=1)
    seed: int | None = None  # the batch composition (None: the items in length order)
    generation: Generation


class Retiming(BaseModel):
    """One generation re-timed for an interleaved speed comparison (a line of interleaved.jsonl in
    the candidate's run): which baseline it was timed against, which pair of batches, which side."""

    model_config = ConfigDict(extra="forbid")

    baseline_key: str
    pair: int = PydField(ge=0)
    side: Literal["baseline", "candidate"]
    first: bool  # this side's batch ran first in its pair (the order alternates: A B, then B A)
    generation: Generation
    # how busy the machine was over the whole re-timing window (evals/timing/load.py); absent in older lines
    machine: MachineLoad | None = None


class FieldScore(BaseModel):
    """The single outcome of one field, with the normalised values that led to it."""

    model_config = ConfigDict(extra="forbid")

    outcome: Outcome
    subcode: str | None = None
    gold_norm: str | None = None
    pred_norm: str | None = None
    detail: str | None = None
