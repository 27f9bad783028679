"""Scoring a run's stored generations against its items, field by field.

Pure and cheap: it never touches a model, so a scorer fix is applied to stored
runs without generating again.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field as PydField

from evals.fields import score_field
from evals.types import CORRECT_OUTCOMES, FieldScore, Generation, Item


class ScoredItem(BaseModel):
    """One item's outcome in one run."""

    item_id: str
    pack: str
    prompt_hash: str
    output: str | None
    error: str | None = None
    fields: dict[str, FieldScore]
    kinds: dict[str, str]
    golds: dict[str, str | None]
    meta: dict[str, Any] = PydField(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.error is None and all(s.outcome in CORRECT_OUTCOMES for s in self.fields.values())


def score_item(item: Item, gen: Generation) -> ScoredItem:
    if gen.error is not None:
        scores = {f.name: FieldScore(outcome="error", detail=gen.error) for f in item.fields}
    else:
        scores = {f.name: score_field(f.kind, f.gold, gen.output, **f.options) for f in item.fields}
    return ScoredItem(
        item_id=item.id,
        pack=item.pack,
        prompt_hash=gen.prompt_hash,
        output=gen.output,
        error=gen.error,
        fields=scores,
        kinds={f.name: f.kind for f in item.fields},
        golds={f.name: f.gold for f in item.fields},
        meta=item.meta,
    )


def score_run(items: list[Item], generations: dict[str, Generation]) -> list[ScoredItem]:
    """Scored items in item order; items without a generation are left out (pairing reports them)."""
    return [score_item(it, generations[it.id]) for it in items if it.id in generations]
