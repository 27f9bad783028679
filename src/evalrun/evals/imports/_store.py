"""An imported run written to the run store like a generated one: `<out>/<name>-<key12>/`
with items.jsonl, samples.jsonl and manifest.json (items_sha256 included), so
`report`, the gate, `rescore`, `export` and samples_df read it through the same
checks as any run.

The key hashes what was imported (items, generations, the source's model and
versions), never a path or a time, so importing the same files again finds the
same directory and reuses it. A run is built in a private staging directory and
renamed into place in one step: a reader never sees half an import, and a stored
run is never rewritten. Several logs of one configuration (`replicates`) are the
baseline and its repeats: `<dir>`, `<dir>-r1`, ... under one key, as `compare
--replicates` stores them, so the gate measures the noise from them.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from evalrun.contract.manifest import SCHEMA_VERSION, RunManifest
from evalrun.evals.files import ConfigError, jsonl, write_atomic
from evalrun.evals.imports._run import Imported
from evalrun.evals.store import RunStore, lines_sha256, run_key

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


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
    """An imported run's lines (each record's `jsonl.canonical` JSON: a valid stored line, keys sorted), the
    items' hash (as `store.items_sha256` computes it) and its key, made once for the key and for the files."""

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
