"""Scoring stored generations field by field, never touching a model: a scorer fix applies to stored runs (rescore)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field as PydField

from evalrun.evals.scoring.fields import ANSWER_MAX_CHARS, score_field
from evalrun.evals.scoring._json_answer import parse_json_answer
from evalrun.evals.scoring._source_metric import SOURCE_METRIC, source_score
from evalrun.contract.types import CORRECT_OUTCOMES, Field, FieldScore, Generation, Item, ItemMeta


class ScoredItem(BaseModel):
    """One item's outcome in one run."""

    item_id: str
    pack: str
    prompt_hash: str
    output: str | None
    output_ids: list[int] | None = None
    error: str | None = None
    fields: dict[str, FieldScore]
    kinds: dict[str, str]
    golds: dict[str, str | None]
    # how a JSON answer was read (strict/fenced/repaired/truncated/failed); None for free text
    parse_status: str | None = None
    suspect_field: str | None = None
    # the item's, so pairing reads them without the item
    answer_format: Literal["text", "json"] | None = None
    meta: ItemMeta = PydField(default_factory=ItemMeta)

    @property
    def correct(self) -> bool:
        return self.error is None and all(s.outcome in CORRECT_OUTCOMES for s in self.fields.values())

    def field_right(self, name: str) -> bool:
        """The field was answered right (a generation error gets no field right)."""
        score = self.fields.get(name)
        return self.error is None and score is not None and score.outcome in CORRECT_OUTCOMES


def _options(f: Field) -> dict[str, Any]:
    """The field's options with its name (it wins over an option of that key): the scorer reads clauses by it."""
    return {**f.options, "field": f.name}


_UNREADABLE = "no JSON object could be read from the answer"


def _score_json(item: Item, output: str) -> tuple[dict[str, FieldScore], str, str | None]:
    # read to the cap as a free-text answer is: an object cut by it is read as truncated (the parse status says so)
    answer = parse_json_answer(output[:ANSWER_MAX_CHARS])
    if answer.data is None:
        # nothing readable: every field was dropped; a decoy too, since nothing said it has no value
        scores = {f.name: FieldScore(outcome="missing", detail=_UNREADABLE) if f.gold is None
                  else score_field(f.kind, f.gold, None, **_options(f)) for f in item.fields}
        return scores, answer.status, None
    data = {str(k).strip().lower(): v for k, v in answer.data.items()}
    scores = {}
    for f in item.fields:
        value = data.get(f.name.lower())
        value = None if isinstance(value, str) and not value.strip() else value  # "" is JSON's "not given" too
        score = score_field(f.kind, f.gold, value, **_options(f))  # a value in its slot: no copied-text reading
        if f.name == answer.suspect_key:
            score = score.model_copy(update={"detail": ((score.detail or "") + " suspect: answer truncated here").strip()})
        scores[f.name] = score
    return scores, answer.status, answer.suspect_key


def score_item(item: Item, gen: Generation) -> ScoredItem:
    parse_status = suspect = None
    if gen.error is not None:
        scores = {f.name: FieldScore(outcome="error", detail=gen.error) for f in item.fields}
    elif item.answer_format == "json":
        scores, parse_status, suspect = _score_json(item, gen.output or "")
    else:
        scores = {f.name: score_field(f.kind, f.gold, gen.output, context=item.prompt, **_options(f))
                  for f in item.fields if SOURCE_METRIC not in f.options}
    # an imported item's field judged by the source harness's own per-sample metric
    scores |= {f.name: source_score(f.options[SOURCE_METRIC], gen.source_scores, f.gold, gen.output)
               for f in item.fields if SOURCE_METRIC in f.options and gen.error is None}
    return ScoredItem(item_id=item.id, pack=item.pack, prompt_hash=gen.prompt_hash, output=gen.output,
                      output_ids=gen.output_ids, error=gen.error, fields=scores,
                      kinds={f.name: f.kind for f in item.fields}, golds={f.name: f.gold for f in item.fields},
                      parse_status=parse_status, suspect_field=suspect, answer_format=item.answer_format,
                      meta=item.meta)


def score_run(items: list[Item], generations: dict[str, Generation]) -> list[ScoredItem]:
    """Scored items in item order; items without a generation are left out (pairing reports them)."""
    return [score_item(it, generations[it.id]) for it in items if it.id in generations]
