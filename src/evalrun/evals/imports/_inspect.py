"""Inspect AI eval logs (`.eval` or `.json`) read as one run, through `inspect_ai.log`.

One item per (task, sample id[, epoch]): the input as the prompt, the target as
gold, the completion as the output, one field per scorer whose values are a
pass/fail ("C"/"I", 1/0, true/false; a scorer with several values gives one field
per key), or the typed field of a `fields:` mapping. A sample that errored is an
`error` generation (the gate counts it as a harmful flip). A log that did not
finish (status other than success) is refused: its missing samples could not be
vouched for. A `.eval` is read entry by entry, each entry bounded (`_eval_zip`); a
`.json` log through inspect_ai's reader. inspect-ai is an optional extra
(`pip install 'evalrun[inspect]'`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from evalrun.contract.types import Field, Generation, Item, ItemMeta
from evalrun.contract.version import __version__
from evalrun.evals.files import ConfigError
from evalrun.evals.imports._eval_zip import iter_samples, read_header
from evalrun.evals.imports._fields import FieldMap
from evalrun.evals.imports._run import (
    Imported, clean_value, file_sha256, metric_field_options, no_outcome, scored_metrics, sha256_text, unknown_outcome,
)


@dataclass
class _Sample:
    """What an import keeps of one sample (never its transcript), so memory does not grow with the log."""

    id: Any
    epoch: int
    prompt: str
    target: str
    output: str | None
    error: str | None
    scores: dict[str, Any]
    new_tokens: int
    prompt_tokens: int

    @classmethod
    def of(cls, s: Any) -> "_Sample":
        usage = s.output.usage if s.output is not None else None
        return cls(s.id, s.epoch, _prompt(s.input), _target(s.target),
                   s.output.completion if s.output is not None else None,
                   s.error.message if s.error is not None else None, _scores(s),
                   usage.output_tokens if usage else 0, usage.input_tokens if usage else 0)


def _read(path: Path) -> tuple[Any, Iterable[Any]]:
    """The log's header (None: it never wrote one) and its samples, read as they are iterated."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ConfigError("reading Inspect logs needs inspect-ai: pip install 'evalrun[inspect]'", file=path) from None
    if not path.is_file():
        raise ConfigError("file not found", file=path)
    if path.suffix == ".eval":
        return read_header(path), iter_samples(path)
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # the library raises many types for a file that is not its log
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ConfigError(f"not a readable Inspect eval log ({type(exc).__name__}: {first[:200]})",
                          file=path) from None
    return log, log.samples or []


def _prompt(value: Any) -> str:
    """The sample's input as one text: a string as it is, chat messages as `role: text` lines."""
    if isinstance(value, str):
        return value
    return "\n".join(f"{getattr(m, 'role', '?')}: {getattr(m, 'text', '')}" for m in value or [])


def _target(value: Any) -> str:
    return " | ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _scores(sample: Any) -> dict[str, Any]:
    """Each scorer's value; a scorer that gives several values (a mapping) gives `scorer.key` each."""
    out: dict[str, Any] = {}
    for name, score in (sample.scores or {}).items():
        value = clean_value(getattr(score, "value", None))
        if isinstance(value, dict):
            out |= {f"{name}.{k}": v for k, v in value.items()}
        else:
            out[name] = value
    return out


def _item_id(task: str, sample: Any, epochs: int) -> str:
    return f"{task}/{sample.id}" + (f"#{sample.epoch}" if epochs > 1 else "")


def _facts(log: Any, task: str) -> dict[str, Any]:
    spec = log.eval
    packages = dict(spec.packages or {})
    args = {k: (v if isinstance(v, (str, int, float, bool)) or v is None else str(v))
            for k, v in (spec.model_args or {}).items()}
    generate = spec.model_generate_config.model_dump(exclude_none=True) if spec.model_generate_config else {}
    dtype = args.get("torch_dtype") or args.get("dtype")
    return {
        "model": {"spec": spec.model, "kind": "inspect", "location": spec.model_base_url,
                  "identity": {"model": spec.model, "model_args": args}},
        "config": {"model": spec.model, "runner": "inspect", "acceleration": {}, "generation": generate or None},
        "runner": "inspect",
        "dtype": str(dtype) if dtype else None,
        "versions": {"inspect_ai": packages.get("inspect_ai"), "evalrun": __version__},
        "packs": [{"pack": task, "version": spec.task_version, "params": {"task_args": spec.task_args or {}}}],
    }


def _results(log: Any) -> dict[str, Any]:
    """Inspect's own aggregate figures per scorer and metric (accuracy, stderr)."""
    out: dict[str, Any] = {}
    for score in (log.results.scores if log.results else None) or []:
        out[score.name] = {name: clean_value(m.value) for name, m in (score.metrics or {}).items()}
    return out


def _one_log(path: Path, mapping: FieldMap) -> Imported:
    log, stream = _read(path)
    status = log.status if log is not None else "started"
    if status != "success":
        raise ConfigError(f"the eval did not finish (status {status!r}): its missing samples cannot be vouched "
                          "for; import a finished log", file=path)
    task = log.eval.task  # pyright: ignore[reportOptionalMemberAccess]
    samples = sorted((_Sample.of(s) for s in stream),
                     key=lambda s: (s.epoch, s.id if isinstance(s.id, str) else str(s.id).zfill(20)))
    if not samples:
        raise ConfigError("holds no samples (written with --no-log-samples?)", file=path)
    epochs = max(s.epoch for s in samples)
    per_task: dict[str, dict[str, list[Any]]] = {task: {}}
    for s in samples:
        for name, value in s.scores.items():
            per_task[task].setdefault(name, []).append(value)
    fields_of, others = scored_metrics(per_task)
    if not fields_of[task] and mapping.spec(task) is None:
        raise no_outcome(task, str(path), others[task])
    items, gens, seen = [], [], set()
    for s in samples:
        item_id = _item_id(task, s, epochs)
        if item_id in seen:
            raise ConfigError(f"sample {item_id!r} is logged twice", file=path)
        seen.add(item_id)
        typed = mapping.typed_field(task, s.target)
        fields = [typed] if typed is not None else [
            Field(name=m, kind="text", gold=s.target, options=metric_field_options(m)) for m in fields_of[task]]
        meta = ItemMeta.model_validate({"task": task, "sample_id": str(s.id), "epoch": s.epoch})
        items.append(Item(id=item_id, pack=task, prompt=s.prompt, answer_format="text", fields=fields, meta=meta))
        error = s.error or (unknown_outcome(fields_of[task], s.scores) if typed is None else None)
        gens.append(Generation(item_id=item_id, pack=task, output=s.output, error=error, source_scores=s.scores,
                               prompt_hash=sha256_text(json.dumps(s.prompt, ensure_ascii=False))[:16],
                               new_tokens=s.new_tokens, prompt_tokens=s.prompt_tokens))
    source = {"format": "inspect", "files": [{"path": str(path), "sha256": file_sha256(path), "samples": len(samples)}],
              "source_results": {task: _results(log)}, "unscored_metrics": {task: others[task]} if others[task] else {}}
    return Imported("inspect", items, gens, _facts(log, task), source)


def read_inspect(paths: list[Path], mapping: FieldMap | None = None) -> Imported:
    """Inspect logs as one run (one log per task; two logs of one task would repeat its items)."""
    mapping = mapping or FieldMap()
    runs = [_one_log(p, mapping) for p in paths]
    tasks = [r.items[0].pack for r in runs]
    if len(set(tasks)) != len(tasks):
        dup = next(t for t in tasks if tasks.count(t) > 1)
        raise ConfigError(f"two logs of task {dup!r} in one import; to import repeats of one configuration "
                          "give --replicates", file=paths[tasks.index(dup, tasks.index(dup) + 1)])
    mapping.check_tasks(set(tasks))
    if len(runs) == 1:
        return runs[0]
    facts = runs[0].facts | {"packs": [p for r in runs for p in r.facts["packs"]]}
    source = {"format": "inspect", "files": [f for r in runs for f in r.source["files"]],
              "source_results": {k: v for r in runs for k, v in r.source["source_results"].items()},
              "unscored_metrics": {k: v for r in runs for k, v in r.source["unscored_metrics"].items()}}
    return Imported("inspect", [i for r in runs for i in r.items], [g for r in runs for g in r.generations],
                    facts, source)
