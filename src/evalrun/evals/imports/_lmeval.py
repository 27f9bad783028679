"""lm-evaluation-harness sample logs (0.4.x, `--log_samples`: `samples_<task>_<time>.jsonl`, with
`results_<time>.json` beside them) read as one run (docs/imports.md). One item per (task, doc_id), merged
over the filters it was logged under; items pair by id and by lm-eval's own prompt hash, so two logs whose
prompts differ for a doc refuse to pair. lm-eval's own aggregate figures are kept in the manifest, so a
report can set the paired verdict beside them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from evalrun.contract.types import Field, Generation, Item, ItemMeta
from evalrun.contract.version import __version__
from evalrun.evals.files import ConfigError
from evalrun.evals.imports._fields import FieldMap
from evalrun.evals.imports._run import (
    Imported, clean_value, file_sha256, item_fields, no_outcome, scored_metrics, sha256_text,
)

SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")
REQUIRED = ("doc_id", "arguments", "resps")
# what says which model ran, compared across the results files of one import
_IDENTITY = ("model", "model_args", "model_dtype", "model_sha", "model_revision")


@dataclass
class _Doc:
    """One (task, doc_id), merged over the filters lm-eval logged it under."""

    task: str
    doc_id: Any
    where: str  # file:line of its first line
    prompt: str | None
    prompt_hash: str
    target: str
    output: str | None
    scores: dict[str, Any] = field(default_factory=dict)
    doc_hash: str | None = None


def sample_files(paths: list[Path]) -> list[tuple[Path, str, str]]:
    """(file, task, timestamp) of every sample log named or found under a named directory."""
    out: list[tuple[Path, str, str]] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("samples_*.jsonl") if p.is_file())
            if not found:
                raise ConfigError("no lm-eval sample logs (samples_<task>_<time>.jsonl) in this directory; "
                                  "run lm_eval with --log_samples --output_path", file=path)
        elif path.is_file():
            found = [path]
        else:
            raise ConfigError("file not found", file=path)
        for p in found:
            m = SAMPLES_NAME.match(p.name)
            if m is None:
                raise ConfigError("not an lm-eval sample log name (samples_<task>_<time>.jsonl, as --log_samples "
                                  "writes it)", file=p)
            out.append((p, m["task"], m["stamp"]))
    return out


def _lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every line's object; an unreadable or foreign line fails the import, naming it."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc}", file=path) from None
    out = []
    chunks = raw.split(b"\n")
    for number, chunk in enumerate(chunks, 1):
        if not chunk.strip():
            continue
        torn = number == len(chunks)  # the last chunk has no newline after it
        try:
            data = json.loads(chunk)
        except ValueError as exc:
            what = "torn last line (no newline, not complete JSON)" if torn else f"not JSON ({exc})"
            raise ConfigError(what, file=f"{path}:{number}") from None
        if not isinstance(data, dict) or any(k not in data for k in REQUIRED):
            missing = [k for k in REQUIRED if not isinstance(data, dict) or k not in data]
            raise ConfigError(f"not an lm-eval sample (no {', '.join(missing)}): a foreign file?",
                              file=f"{path}:{number}")
        out.append((number, data))
    if not out:
        raise ConfigError("holds no samples", file=path)
    return out


def _arguments(arguments: Any) -> list[list[Any]]:
    """Each request's arguments: {"gen_args_0": {"arg_0": prompt, ...}} as lm-eval writes them
    (0.4.3 on), or the older list of argument lists."""
    if isinstance(arguments, dict):
        def index(key: str) -> int:
            return int(key.rpartition("_")[2]) if key.rpartition("_")[2].isdigit() else 0
        return [[args[k] for k in sorted(args, key=index)] if isinstance(args, dict) else [args]
                for _, args in sorted(arguments.items(), key=lambda kv: index(kv[0]))]
    if isinstance(arguments, list):
        return [list(a) if isinstance(a, (list, tuple)) else [a] for a in arguments]
    return []


def _response(resps: Any, filtered: Any, args: list[list[Any]]) -> str | None:
    """The model's answer as text: the first generation (generate_until), or the continuation with
    the highest log-likelihood (multiple choice, whose responses are (logprob, is_greedy) pairs)."""
    first = resps[0] if isinstance(resps, list) and resps else None
    if isinstance(first, list) and first and isinstance(first[0], str):
        return first[0]
    try:
        lls = [float(r[0]) if isinstance(r, (list, tuple)) else float(r) for r in filtered]
        best = max(range(len(lls)), key=lls.__getitem__)
        return str(args[best][1])
    except (TypeError, ValueError, IndexError):
        return json.dumps(filtered, ensure_ascii=False) if filtered is not None else None


def _read_doc(task: str, where: str, data: dict[str, Any]) -> _Doc:
    args = _arguments(data["arguments"])
    prompt = args[0][0] if args and args[0] and isinstance(args[0][0], str) else None
    logged = data.get("prompt_hash")
    if prompt is not None:
        digest = sha256_text(prompt)
        if isinstance(logged, str) and logged != digest:
            raise ConfigError("the logged prompt_hash does not match the logged prompt (an edited log?)", file=where)
    elif isinstance(logged, str) and logged:
        digest = logged
    else:
        raise ConfigError("neither the prompt nor its prompt_hash is logged: nothing to pair it on", file=where)
    metrics = data.get("metrics")
    names = metrics if isinstance(metrics, list) else []
    flt = data.get("filter")
    key_of = {m: str(m) if flt in (None, "none") else f"{m},{flt}" for m in names}
    return _Doc(task, data["doc_id"], where, prompt, digest, str(data.get("target", "")),
                _response(data["resps"], data.get("filtered_resps"), args),
                {key_of[m]: clean_value(data.get(m)) for m in names}, data.get("doc_hash"))


def _merge(docs: dict[tuple[str, str], _Doc], doc: _Doc, filter_name: Any, seen: dict[tuple, str]) -> None:
    """Lines of one doc under other filters add their metrics; a doc logged twice under one filter,
    whose prompt or target differ between its lines, or whose id is another's as text (2 and "2"),
    is refused."""
    key = (doc.task, str(doc.doc_id))  # what the item id is made of
    first = docs.get(key)
    if first is not None and json.dumps(first.doc_id) != json.dumps(doc.doc_id):
        raise ConfigError(f"doc_id {doc.doc_id!r} of task {doc.task!r} and doc_id {first.doc_id!r} at {first.where} "
                          f"are one item ({doc.task}/{doc.doc_id}): a log joined from two sources?", file=doc.where)
    line_key = (*key, str(filter_name))
    if line_key in seen:
        raise ConfigError(f"doc_id {doc.doc_id!r} of task {doc.task!r} (filter {filter_name}) is logged twice, "
                          f"first at {seen[line_key]}: two runs in one import?", file=doc.where)
    seen[line_key] = doc.where
    first = docs.setdefault(key, doc)
    if first is doc:
        return
    if (first.prompt_hash, first.target) != (doc.prompt_hash, doc.target):
        raise ConfigError(f"doc_id {doc.doc_id!r} of task {doc.task!r} has another prompt or target than at "
                          f"{first.where}", file=doc.where)
    first.scores |= doc.scores


def _item(doc: _Doc, fields: list[Field]) -> Item:
    prompt = doc.prompt if doc.prompt is not None else f"[prompt not logged; lm-eval prompt_hash {doc.prompt_hash}]"
    meta = ItemMeta.model_validate({"doc_id": str(doc.doc_id), "task": doc.task,
                                    **({"doc_hash": doc.doc_hash} if doc.doc_hash else {})})
    return Item(id=f"{doc.task}/{doc.doc_id}", pack=doc.task, prompt=prompt, answer_format="text", fields=fields,
                meta=meta)


def _build(docs: list[_Doc], mapping: FieldMap) -> tuple[list[Item], list[Generation], dict[str, list[str]]]:
    fields_of, others = scored_metrics((d.task, d.scores) for d in docs)
    for task in fields_of:
        if not fields_of[task] and mapping.spec(task) is None:
            raise no_outcome(task, next(d.where for d in docs if d.task == task).rpartition(":")[0], others[task])
    items, gens = [], []
    for d in docs:
        fields, error = item_fields(mapping, d.task, d.target, fields_of[d.task], d.scores)
        items.append(_item(d, fields))
        gens.append(Generation(item_id=items[-1].id, pack=d.task, prompt_hash=d.prompt_hash[:16], output=d.output,
                               error=error, source_scores=d.scores))
    return items, gens, others


def read_lmeval(paths: list[Path], mapping: FieldMap | None = None) -> Imported:
    """The sample logs under `paths` (files or directories) as one imported run."""
    mapping = mapping or FieldMap()
    files = sample_files(paths)
    docs: dict[tuple[str, str], _Doc] = {}
    seen: dict[tuple, str] = {}
    counts: dict[Path, int] = {}
    for path, task, _ in files:
        lines = _lines(path)
        counts[path] = len(lines)
        for number, data in lines:
            _merge(docs, _read_doc(task, f"{path}:{number}", data), data.get("filter"), seen)
    results = read_results(files)
    tasks = {d.task for d in docs.values()}
    mapping.check_tasks(tasks)
    results.check_counts(files, docs.values())
    ordered = sorted(docs.values(), key=lambda d: (d.task, _order(d.doc_id)))
    items, gens, others = _build(ordered, mapping)
    source = {"format": "lm-eval", "files": [{"path": str(p), "sha256": file_sha256(p), "lines": counts[p]}
                                             for p, _, _ in files],
              # lm-eval's own per-task figures (accuracy and stderr per metric and filter) and its files
              "results_files": [{"path": str(p), "sha256": file_sha256(p)} for p in results.files],
              "source_results": results.per_task("results"),
              "unscored_metrics": {t: m for t, m in others.items() if m}}
    return Imported("lm-eval", items, gens, results.facts(sorted(tasks)), source)


def _order(doc_id: Any) -> tuple[int, Any]:
    return (0, doc_id) if isinstance(doc_id, int) else (1, str(doc_id))


@dataclass
class Results:
    """The results files of one import, merged (they must describe one model)."""

    files: list[Path] = field(default_factory=list)
    data: list[dict[str, Any]] = field(default_factory=list)

    def first(self) -> dict[str, Any]:
        return self.data[0] if self.data else {}

    def per_task(self, key: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for d in self.data:
            value = d.get(key)
            if isinstance(value, dict):
                out |= value
        return out

    def check_counts(self, files: list[tuple[Path, str, str]], docs: Iterable[_Doc]) -> None:
        """A sample log holding fewer docs than its results file says were evaluated was cut short."""
        n_samples = self.per_task("n-samples")
        held: dict[str, int] = {}
        for d in docs:
            held[d.task] = held.get(d.task, 0) + 1
        for path, task, _ in files:
            effective = (n_samples.get(task) or {}).get("effective") if isinstance(n_samples.get(task), dict) else None
            if isinstance(effective, int) and held.get(task) != effective:
                raise ConfigError(f"holds {held.get(task, 0)} docs of task {task!r}, but its results file says "
                                  f"{effective} were evaluated: a truncated log, or files of two runs", file=path)

    def facts(self, tasks: list[str]) -> dict[str, Any]:
        """The manifest's model, config, versions and packs, from what lm-eval recorded."""
        first = self.first()
        raw = first.get("config")
        config: dict[str, Any] = raw if isinstance(raw, dict) else {}
        args = config.get("model_args")
        args_map = args if isinstance(args, dict) else _parse_args(args)
        versions, n_shot, hashes = self.per_task("versions"), self.per_task("n-shot"), self.per_task("task_hashes")
        gen_kwargs = {t: c.get("generation_kwargs") for t, c in self.per_task("configs").items() if isinstance(c, dict)}
        model_name = first.get("model_name") or args_map.get("pretrained")
        dtype = args_map.get("dtype") or config.get("model_dtype")
        return {
            "model": {"spec": model_name, "kind": "lm-eval", "location": args_map.get("pretrained"),
                      "identity": {k: config.get(k) for k in _IDENTITY if config.get(k) not in (None, "")}},
            "config": {"model": model_name, "runner": f"lm-eval {config.get('model') or ''}".strip(),
                       "acceleration": {}, "generation": config.get("gen_kwargs") or None},
            "runner": "lm-eval",
            "device": config.get("device"),
            "dtype": str(dtype) if dtype is not None else None,
            "versions": {"lm_eval": first.get("lm_eval_version"), "transformers": first.get("transformers_version"),
                         "evalrun": __version__},
            "packs": [{"pack": t, "version": versions.get(t),
                       "params": {k: v for k, v in (("num_fewshot", n_shot.get(t)), ("task_hash", hashes.get(t)),
                                                    ("generation_kwargs", gen_kwargs.get(t))) if v is not None}}
                      for t in tasks],
        }


def _parse_args(text: Any) -> dict[str, Any]:
    """lm-eval's `key=value,key=value` model arguments (older results files keep the string)."""
    if not isinstance(text, str):
        return {}
    out: dict[str, Any] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def read_results(files: list[tuple[Path, str, str]]) -> Results:
    """The results file of each sample log's timestamp, where there is one; several must agree on the model."""
    out = Results()
    for path, _, stamp in files:
        result = path.with_name(f"results_{stamp}.json")
        if not result.is_file() or result in out.files:
            continue
        try:
            data = json.loads(result.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"not a readable lm-eval results file ({exc})", file=result) from None
        if not isinstance(data, dict) or not isinstance(data.get("config", {}), dict):
            raise ConfigError("not an lm-eval results file (no config object)", file=result)
        if out.data:
            mine = {k: (data.get("config") or {}).get(k) for k in _IDENTITY}
            theirs = {k: (out.first().get("config") or {}).get(k) for k in _IDENTITY}
            if mine != theirs:
                raise ConfigError(f"describes another model than {out.files[0]} ({mine} vs {theirs}): import each "
                                  "run on its own", file=result)
        out.files.append(result)
        out.data.append(data)
    return out
