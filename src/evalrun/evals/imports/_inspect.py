"""Inspect AI eval logs (`.eval` or `.json`) read as one run (docs/imports.md); inspect-ai is an optional extra.
A log that did not finish is refused: its missing samples could not be vouched for. A `.eval` zip is read
entry by entry, each inflated in chunks up to `MAX_ENTRY_BYTES`, keeping only what an import reads:
`read_eval_log` keeps every transcript (a 10,000-sample log cost 40 s and 840 MB).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from evalrun.contract.types import Generation, Item, ItemMeta
from evalrun.contract.version import __version__
from evalrun.evals.files import ConfigError
from evalrun.evals.imports._fields import FieldMap
from evalrun.evals.imports._run import (
    Imported, clean_value, file_sha256, item_fields, no_outcome, scored_metrics, sha256_text,
)

MAX_ENTRY_BYTES = 64 * 2**20  # one inflated entry: far above a real sample, far below a zip bomb
_CHUNK = 2**20
_SAMPLE_KEYS = ("id", "epoch", "input", "target", "output", "scores", "error")
HEADER = "header.json"
SAMPLES = "samples/"


def _entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, cap: int) -> Any:
    """One entry's JSON, inflated in chunks and refused past `cap` bytes (its declared size first)."""
    where = f"{path}: {info.filename}"
    too_big = (f"inflates past {cap // 2**20} MiB (the cap on one entry of an Inspect log): a zip bomb, or a sample "
               "too large to import")
    if info.file_size > cap:
        raise ConfigError(too_big, file=where)
    chunks, size = [], 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(_CHUNK):
                size += len(chunk)
                if size > cap:
                    raise ConfigError(too_big, file=where)
                chunks.append(chunk)
        return json.loads(b"".join(chunks))
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise ConfigError(f"not a readable Inspect log entry ({type(exc).__name__}: {str(exc)[:200]})",
                          file=where) from None


def _open(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ConfigError(f"not a readable Inspect eval log ({type(exc).__name__}: {str(exc)[:200]})",
                          file=path) from None


def read_header(path: Path, cap: int = MAX_ENTRY_BYTES) -> Any:
    """The header as an `EvalLog` without samples; None where the log never wrote one (it did not finish)."""
    from inspect_ai.log import EvalLog

    with _open(path) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        if HEADER not in infos:
            return None
        data = _entry(zf, infos[HEADER], path, cap)
    try:
        return EvalLog.model_validate(data)
    except ValueError as exc:
        raise ConfigError(f"not a readable Inspect eval log header ({_first_line(exc)})",
                          file=f"{path}: {HEADER}") from None


def iter_samples(path: Path, cap: int = MAX_ENTRY_BYTES) -> Iterator[Any]:
    """Each sample as an `EvalSample` holding only what an import reads, one entry at a time; a sample
    logged again (a retried one) is read once, its last entry, as inspect_ai reads it."""
    from inspect_ai.log import EvalSample

    with _open(path) as zf:
        last = {i.filename: i for i in zf.infolist() if i.filename.startswith(SAMPLES) and i.filename.endswith(".json")}
        for name, info in last.items():
            data = _entry(zf, info, path, cap)
            try:
                yield EvalSample.model_validate({k: data[k] for k in _SAMPLE_KEYS if k in data})
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"not an Inspect sample ({_first_line(exc)})", file=f"{path}: {name}") from None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else ""


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
        raise ConfigError(f"not a readable Inspect eval log ({type(exc).__name__}: {_first_line(exc)})",
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
    fields_of, others = scored_metrics((task, s.scores) for s in samples)
    if not fields_of[task] and mapping.spec(task) is None:
        raise no_outcome(task, str(path), others[task])
    items, gens, seen = [], [], set()
    for s in samples:
        item_id = f"{task}/{s.id}" + (f"#{s.epoch}" if epochs > 1 else "")
        if item_id in seen:
            raise ConfigError(f"sample {item_id!r} is logged twice", file=path)
        seen.add(item_id)
        fields, error = item_fields(mapping, task, s.target, fields_of[task], s.scores)
        meta = ItemMeta.model_validate({"task": task, "sample_id": str(s.id), "epoch": s.epoch})
        items.append(Item(id=item_id, pack=task, prompt=s.prompt, answer_format="text", fields=fields, meta=meta))
        gens.append(Generation(item_id=item_id, pack=task, output=s.output, error=s.error or error,
                               source_scores=s.scores,
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
