"""Scoring: typed fields, JSON answers, a run's generations field by field, metrics, baseline stability."""

from __future__ import annotations

from evalrun.evals.scoring.fields import (
    AMBIGUOUS, ANSWER_MAX_CHARS, COPIED, LOOPING, NAMED, OTHER_SHAPE, OUTCOMES, REFUSAL, SUBCODES, score_field,
)
from evalrun.evals.scoring._json_answer import JsonAnswer, PARSE_STATUSES, parse_json_answer
from evalrun.evals.scoring._source_metric import SOURCE_METRIC, is_pass_fail, outcome_of
from evalrun.evals.scoring._scoring import ScoredItem, score_item, score_run
from evalrun.evals.scoring._stability import FieldKey, Stability, stability
from evalrun.evals.scoring._metrics import FieldMetrics, PackMetrics, field_counts, micro_f1, pack_metrics

__all__ = ["AMBIGUOUS", "ANSWER_MAX_CHARS", "COPIED", "FieldKey", "FieldMetrics", "JsonAnswer", "LOOPING", "NAMED",
           "OTHER_SHAPE", "OUTCOMES", "PARSE_STATUSES", "PackMetrics", "REFUSAL", "SOURCE_METRIC", "SUBCODES",
           "ScoredItem", "Stability", "field_counts", "is_pass_fail", "micro_f1", "outcome_of", "pack_metrics",
           "parse_json_answer", "score_field", "score_item", "score_run", "stability"]
