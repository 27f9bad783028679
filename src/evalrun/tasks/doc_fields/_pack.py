"""Long-document key-field extraction (invoices, contracts, statements): typed fields, distractors that make
extraction hard (subtotal vs total, last year's figures, one digit off) and decoys, padded to lengths in the
model's tokens, because lossy KV methods drop such details from long contexts. Facts depend on (seed, index)
only, so length effects are not confounded with value difficulty."""

from __future__ import annotations

from typing import Literal

from pydantic import Field as PydField, field_validator, model_validator

from evalrun.contract.types import CONTEXT_SEPARATOR, Field, Item, ItemMeta
import evalrun.tasks.doc_fields._text as T
from evalrun.tasks.base import PackParams, PackSpec, TokenCounter
from evalrun.tasks.doc_fields._facts import ALL_FIELDS, CORE, MAX_DECOYS, OPTIONAL, Doc, Fact, make_doc

__all__ = ["CORE", "CURRENCY_SYNONYMS", "OPTIONAL", "SPEC", "DocFieldsParams", "build"]
from evalrun.tasks.doc_fields._layout import layout

CURRENCY_SYNONYMS = {"€": "EUR", "euro": "EUR", "euros": "EUR", "$": "USD", "us dollar": "USD", "us dollars": "USD",
                     "dollar": "USD", "dollars": "USD", "£": "GBP", "pound": "GBP", "pounds": "GBP",
                     "pound sterling": "GBP", "swiss franc": "CHF", "swiss francs": "CHF", "francs": "CHF"}

NAME = "doc_fields"
VERSION = "1"

DocType = Literal["invoice", "contract", "financial_statement"]
Mode = Literal["per_field", "json"]


JSON_MIN_LENGTH = 600  # the largest documents need about 540 tokens for their facts and the key list


DEFAULT_DOC_TYPES: tuple[DocType, ...] = ("invoice", "contract", "financial_statement")


class DocFieldsParams(PackParams):
    documents: int = 6
    doc_types: list[DocType] = PydField(default_factory=lambda: list(DEFAULT_DOC_TYPES), min_length=1)
    lengths: list[int] = PydField(default_factory=lambda: [600], min_length=1)
    mode: Mode = "per_field"
    fields: list[str] | None = None
    decoys: int = 1

    @field_validator("documents")
    @classmethod
    def _documents(cls, v: int) -> int:
        if not 1 <= v <= 10_000:
            raise ValueError("documents must be between 1 and 10000")
        return v

    @field_validator("lengths")
    @classmethod
    def _lengths(cls, v: list[int]) -> list[int]:
        if any(n < 400 or n > 1_000_000 for n in v):
            raise ValueError("each length must be between 400 and 1000000 tokens")
        return v

    @field_validator("fields")
    @classmethod
    def _fields(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("fields must name at least one field (or be omitted for all)")
        unknown = [f for f in v if f not in T.FIELD_INFO]
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(ALL_FIELDS)}")
        return v

    @field_validator("decoys")
    @classmethod
    def _decoys(cls, v: int) -> int:
        if not 0 <= v <= MAX_DECOYS:
            raise ValueError(f"decoys must be between 0 and {MAX_DECOYS}")
        return v

    @model_validator(mode="after")
    def _json_room(self) -> DocFieldsParams:
        # the key list and all facts must fit before any padding; checked here, not per seed at build time
        if self.mode == "json" and min(self.lengths) < JSON_MIN_LENGTH:
            raise ValueError(f"json mode needs lengths of at least {JSON_MIN_LENGTH} tokens")
        return self

def _items(d: Doc, asked: list[Fact], length: int, params: DocFieldsParams, count: TokenCounter) -> list[Item]:
    noun = T.NOUNS[d.doc_type]
    if params.mode == "json":
        intro = f"Read the {noun} below and extract the fields listed after it."
        tails = {"": T.json_request([f.name for f in asked])}
    else:
        intro = f"Read the {noun} below and answer the question after it."
        tails = {f.name: T.question(d.doc_type, f.name) for f in asked}
    longest = max(tails.values(), key=lambda t: count(f"\n\n{t}"))
    budget = length - count(f"{intro}\n\n{T.TITLES[d.doc_type]}") - count(f"\n\n{longest}")
    for _ in range(8):  # the sum of piece counts can differ a little from the whole: trim until it fits
        doc, placed = layout(d, length, params.seed, budget, count, f"{NAME}:{VERSION}")
        over = count(f"{intro}\n\n{doc}\n\n{longest}") - length
        if over <= 0:
            break
        budget -= over + 2
    else:
        raise ValueError(f"{NAME}: cannot fit document {d.doc_id} into {length} tokens")
    distractors = [{"kind": k, "depth": placed[k][0], "sentence": placed[k][1]} for k in d.distractors if k in placed]
    base = {"doc_id": d.doc_id, "doc_type": d.doc_type, "target_tokens": length, "mode": params.mode,
            "amount_style": d.amount_style, "date_style": d.date_style, "distractors": distractors}
    cell = f"{NAME}/{d.doc_id}-L{length}"
    context = f"{intro}\n\n{doc}"

    def field(f: Fact) -> Field:
        # the currency field (the pack's one enum) names its codes and how they are written
        opts = {"allowed": list(T.CURRENCIES), "synonyms": dict(CURRENCY_SYNONYMS)} if f.name == "currency" else {}
        return Field(name=f.name, kind=f.kind, gold=f.gold, options=opts)

    def where(f: Fact) -> tuple[float | None, str | None]:
        return placed[f.name] if f.gold is not None else (None, None)

    def item(item_id: str, question: str, answer_format: str, asked_fields: list[Field], **meta: object) -> Item:
        prompt = context + CONTEXT_SEPARATOR + question
        return Item(id=item_id, pack=NAME, prompt=prompt, context=context, question=question,
                    answer_format=answer_format, fields=asked_fields,  # pyright: ignore[reportArgumentType]
                    meta=ItemMeta.model_validate({**base, "context_tokens": count(prompt), **meta}))

    if params.mode == "json":
        places = {f.name: dict(zip(("depth", "source"), where(f))) for f in asked}
        return [item(cell, tails[""], "json", [field(f) for f in asked], fields=places)]
    items: list[Item] = []
    for f in asked:
        depth, source = where(f)
        items.append(item(f"{cell}/{f.name}", tails[f.name], "text", [field(f)], field=f.name,
                          decoy=f.gold is None, field_depth=depth, source=source))
    return items


def build(params: DocFieldsParams, count: TokenCounter) -> list[Item]:
    items: list[Item] = []
    for index in range(params.documents):
        doc_type = params.doc_types[index % len(params.doc_types)]
        d, facts = make_doc(doc_type, index, params.seed, params.decoys, f"{NAME}:{VERSION}")
        asked = [f for f in facts if params.fields is None or f.name in params.fields]
        if not asked:
            continue
        for length in params.lengths:
            items.extend(_items(d, asked, length, params, count))
    return items


SPEC = PackSpec(
    name=NAME,
    version=VERSION,
    params=DocFieldsParams,
    build=build,
    description=(
        "Key-field extraction from long generated invoices, service contracts and annual statements, with "
        "near-miss distractors and absent decoy fields; one question per field or one JSON object."
    ),
)
