"""What an import produces, the readers' shared helpers, and how the run is stored: like a generated one, so
every command reads it through the same checks. The key hashes what was imported, never a path or a time;
the run is built in a private staging directory and renamed into place in one step (docs/imports.md).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from evalrun.contract.manifest import SCHEMA_VERSION, RunManifest
from evalrun.contract.types import Field, Generation, Item
from evalrun.evals.files import ConfigError, jsonl, write_atomic
from evalrun.evals.imports._fields import FieldMap
from evalrun.evals.scoring import SOURCE_METRIC, is_pass_fail, outcome_of
from evalrun.evals.store import RunStore, lines_sha256, run_key

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass
class Imported:
    """One run read from another harness's logs."""

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
    return {str(k): clean_value(v) for k, v in value.items()} if isinstance(value, dict) else value


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


@dataclass
class StoredImport:
    """Where an import went: the run directory, its key, and whether it was already there."""

    dir: Path
    key: str
    reused: bool
    items: int
    replicate: int = 0


@dataclass
class _Dumped:
    """An imported run's `jsonl.canonical` lines, items' hash and key, made once for the key and the files."""

    items: list[str]
    items_sha256: str
    generations: list[str]
    key: str


def _dump(run: Imported) -> _Dumped:
    """The key hashes what was imported: the same files give the same key wherever they lie."""
    items = [jsonl.canonical(r) for r in run.items]
    gens = [jsonl.canonical(g) for g in run.generations]
    digest = lines_sha256(items)
    key = run_key({"format": run.format, "items": digest, "generations": lines_sha256(gens), "facts": run.facts})
    return _Dumped(items, digest, gens, key)


def _manifest(run: Imported, name: str, key: str, replicate: int, digest: str) -> dict[str, Any]:
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    data = {"schema_version": SCHEMA_VERSION, "name": name, "replicate": replicate, "key": key,
            **({"role": "replicate"} if replicate else {}), **run.facts, "status": "complete", "created": stamp,
            "updated": stamp, "items_total": len(run.items),
            "items_error": sum(1 for g in run.generations if g.error is not None), "items_sha256": digest,
            "imported": run.source}
    return RunManifest.model_validate(data).to_dict()


def _write(run: Imported, dumped: _Dumped, final: Path, name: str, key: str, replicate: int) -> bool:
    """Build the run beside `final` and rename it into place; False when `final` already holds it."""
    if final.exists():
        return False
    staging = final.with_name(f".{final.name}.importing-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)  # our own leftover, from a process of this pid
    try:
        store = RunStore(staging)
        write_atomic(store.items_path, "".join(t + "\n" for t in dumped.items))
        write_atomic(store.samples_path, "".join(t + "\n" for t in dumped.generations))
        store.write_manifest(_manifest(run, name, key, replicate, dumped.items_sha256))
        try:
            os.rename(staging, final)
        except OSError:
            if not final.exists():
                raise
            return False  # another import of the same files won the race: theirs is the same run
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def _check_existing(final: Path, key: str) -> None:
    try:
        stored = RunStore(final).read_manifest().get("key")
    except ConfigError as exc:
        raise ConfigError(f"a run is already stored here and cannot be read ({exc}); move it aside",
                          file=final) from None
    if stored != key:
        raise ConfigError(f"a different run is already stored here (key {stored!r}, this import's {key[:12]}...); "
                          "move it aside", file=final)


def _same_items(base: Imported, other: Imported, label: str) -> None:
    """A replicate asks what the baseline asked: the same item ids under the same prompts."""
    asked = {g.item_id: g.prompt_hash for g in base.generations}
    theirs = {g.item_id: g.prompt_hash for g in other.generations}
    if asked != theirs:
        differ = sorted(set(asked) ^ set(theirs)) or sorted(i for i in asked if asked[i] != theirs.get(i))
        raise ConfigError(f"{label} is not a repeat of the first log: item {differ[0]!r} differs (other docs or "
                          "prompts); replicates must run the same tasks with the same settings")


def store_imported(runs: list[Imported], name: str, out: str | Path = "runs",
                   log: Callable[[str], None] = print) -> list[StoredImport]:
    """Store one imported run, or a baseline and its replicates (runs[1:]) under one key."""
    if not NAME.match(name):
        raise ConfigError("a run name is letters, digits, '_', '.', '-' (not starting with a dot or dash), "
                          f"got {name!r}", path="--name")
    for j, other in enumerate(runs[1:], 1):
        _same_items(runs[0], other, f"replicate {j}")
    dumped = [_dump(r) for r in runs]
    keys = [d.key for d in dumped]
    key = keys[0] if len(runs) == 1 else run_key({"replicates": keys})
    base_dir = Path(out) / f"{name}-{key[:12]}"
    base_dir.parent.mkdir(parents=True, exist_ok=True)
    stored = []
    for j, run in enumerate(runs):
        final = base_dir if j == 0 else base_dir.with_name(f"{base_dir.name}-r{j}")
        wrote = _write(run, dumped[j], final, name, key, j)
        if not wrote:
            _check_existing(final, key)
            log(f"{name}{f'~r{j}' if j else ''}: already imported from the same content: reusing {final}")
        stored.append(StoredImport(final, key, not wrote, len(run.items), j))
    return stored
