"""What an import produces before it is stored, and the shared helpers of the readers."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from evalrun.contract.types import Field, Generation, Item
from evalrun.evals.files import ConfigError
from evalrun.evals.imports._fields import FieldMap
from evalrun.evals.scoring import SOURCE_METRIC, is_pass_fail, outcome_of


@dataclass
class Imported:
    """One run read from another harness's logs: the items it asked, the generations it stored,
    and what the manifest records about it (model, versions, tasks, the source files)."""

    format: str  # "lm-eval" | "inspect"
    items: list[Item]
    generations: list[Generation]
    # manifest sections: model, config, runner, device, dtype, versions, packs
    facts: dict[str, Any] = field(default_factory=dict)
    # the manifest's `imported` section: the files, the source's own aggregate figures, unscored metrics
    source: dict[str, Any] = field(default_factory=dict)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:  # in chunks: a log's size never sits in memory
        while chunk := fh.read(2**20):
            digest.update(chunk)
    return digest.hexdigest()


def clean_value(value: Any) -> Any:
    """A metric value as stored: NaN and infinities (not JSON) become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): clean_value(v) for k, v in value.items()}
    return value


def scored_metrics(samples: Iterable[tuple[str, dict[str, Any]]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per task of the (task, scores) samples, the metrics that are a pass/fail per sample (each becomes a
    field) and the others (kept on the generations and named in the manifest, never an outcome)."""
    per_task: dict[str, dict[str, list[Any]]] = {}
    for task, scores in samples:
        metrics = per_task.setdefault(task, {})
        for name, value in scores.items():
            metrics.setdefault(name, []).append(value)
    fields = {task: [m for m, values in metrics.items() if is_pass_fail(values)] for task, metrics in per_task.items()}
    others = {task: [m for m in metrics if m not in fields[task]] for task, metrics in per_task.items()}
    return fields, others


def item_fields(mapping: FieldMap, task: str, target: str, metrics: list[str], scores: dict[str, Any],
                ) -> tuple[list[Field], str | None]:
    """An item's fields: the mapping's typed field, else one per pass/fail metric of the source (whose
    verdict decides); and the generation's error where that verdict is unknown (unknown_outcome)."""
    typed = mapping.typed_field(task, target)
    if typed is not None:
        return [typed], None
    return ([Field(name=m, kind="text", gold=target, options={SOURCE_METRIC: m}) for m in metrics],
            unknown_outcome(metrics, scores))


def unknown_outcome(metrics: list[str], scores: dict[str, Any]) -> str | None:
    """Why the source's verdict on this answered sample is unknown (a field's metric NaN or not
    logged), or None. The readers store it as the generation's error, so the comparison takes the
    path of a generation that raised: a gap at baseline (exit 4), never "wrong at baseline", which
    would hide the candidate's losses there."""
    unknown = [m for m in metrics if outcome_of(scores.get(m)) is None]
    if not unknown:
        return None
    return f"outcome unknown: the source logged no pass/fail value for {', '.join(unknown)} (NaN or not logged)"


def no_outcome(task: str, where: str, others: list[str]) -> ConfigError:
    logged = ", ".join(others) or "nothing"
    return ConfigError(f"task {task!r} logs no per-sample pass/fail metric (it logs: {logged}): nothing to pair on; "
                       f"score its answers with evalrun's typed scorer instead: --field {task}=number (or amount, "
                       "date, id, text)", file=where)

