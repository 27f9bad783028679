"""A prepared run and a stored run read back (scored again by `rescore`): no executor here, so the speed figures
and the manifest can use them without importing what makes them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from evalrun.contract.manifest import MachineLoad, RunManifest
from evalrun.contract.validation import first_error
from evalrun.contract.types import Generation, Item
from evalrun.evals.files import ConfigError, jsonl, store_files
from evalrun.evals.config import RunConfig
from evalrun.evals.scoring import PackMetrics, ScoredItem, pack_metrics, score_run
from evalrun.evals.store import SCORES, RunStore
from evalrun.runners.base import RunRequest
from evalrun.runners.models import ModelSource
from evalrun.runners.openai import scrub_known


def without_secrets(gen: Generation) -> Generation:
    """Every secret this process knows masked: a server may echo what it was given, into files and reports."""
    out = scrub_known(gen.output) if gen.output else gen.output
    error = scrub_known(gen.error) if gen.error else gen.error
    return gen if (out, error) == (gen.output, gen.error) else gen.model_copy(update={"output": out, "error": error})


@dataclass
class PreparedRun:
    """A config resolved to its items, its cache key and its directory."""

    config: RunConfig
    source: ModelSource
    device: str
    dtype: str
    items: list[Item]
    key: str
    dir: Path
    runner: Any = field(repr=False, default=None)
    replicate: int = 0
    role: str | None = None  # "replicate": a repeat of the baseline the gate measures the noise with
    limit: int | None = None  # --limit N: only the first N items of each pack

    @property
    def store(self) -> RunStore:
        return RunStore(self.dir)

    @property
    def label(self) -> str:
        """The config's name, marked with the replicate for repeated runs (A/A)."""
        return self.config.name + (f"~r{self.replicate}" if self.replicate else "")

    def request(self, items: list[Item], **changes: Any) -> RunRequest:
        """The runner's hand-off for `items`; a replicate gets its own batch seed (other batches: a GPU server's noise),
        and `changes` replace fields for one call (a re-ask's batches, teacher forcing, the distributions' writer)."""
        base = RunRequest(items, self.config.generation, run_items=self.items, batch_seed=self.replicate or None,
                          top_k=self.config.logprobs)
        return replace(base, **changes) if changes else base


@dataclass
class Interleaved:
    """Batches of both runs re-timed alternately in one process (evals/speed/interleave.py): what speedups use."""

    baseline: str  # the baseline's label
    base: dict[str, Generation]
    cand: dict[str, Generation]
    batches: int  # batch pairs timed
    machine: MachineLoad | None = None  # the busiest re-timing window's load; None: not recorded

    @property
    def basis(self) -> str:
        return f"interleaved re-timing ({self.batches} batch pairs, A B A B)"


@dataclass
class RunResult:
    """A stored run as the later stages see it; built by `execute` or read back from disk."""

    name: str
    dir: Path
    items: list[Item]
    generations: dict[str, Generation]
    manifest: RunManifest
    reused: bool = True
    generated: int = 0
    # what reading the store found (skipped lines, unknown keys, a rebuilt manifest)
    warnings: list[str] = field(default_factory=list)
    interleaved: Interleaved | None = None
    # --limit N: the items are each pack's first N, not the config's whole plan (evals.gate)
    limit: int | None = None

    def __post_init__(self) -> None:
        # builders (tests, scripts) may pass the manifest as the JSON dict it is on disk
        if isinstance(self.manifest, dict):
            self.manifest = RunManifest.model_validate(self.manifest)
        # what every later stage and renderer reads: a run stored before its secret was known, or
        # imported, shows it masked too (the file is left as it is)
        self.generations = {k: without_secrets(g) for k, g in self.generations.items()}

    @classmethod
    def load(cls, run_dir: str | Path, trust_edited_items: bool = False,
             log: Callable[[str], None] | None = None) -> "RunResult":
        """Read a run directory (no model): its items, generations and manifest. An unreadable
        manifest or edited items.jsonl is refused (ConfigError) unless `trust_edited_items`;
        every problem found on the way is passed to `log` and kept in `warnings`."""
        store = RunStore(run_dir, log=log)
        data, items = store.read_checked(trust_edited_items)
        manifest = manifest_model(data, store.manifest_path)
        name = manifest.label or store.dir.name
        generations = store.read_samples()
        return cls(name, store.dir, items, dict(generations), manifest, warnings=store.warnings,
                   limit=manifest.limit)


def _run_store(run_dir: str | Path, log: Callable[[str], None] | None = None) -> RunStore:
    """A directory without manifest.json and items.jsonl is refused before anything is read, never an empty run."""
    store = RunStore(run_dir, log=log)
    if not store.exists() or not store_files.exists(store.items_path):
        raise ConfigError("not a run directory (needs manifest.json and items.jsonl)", file=run_dir)
    return store


def load_stored(run_dir: str | Path, trust_edited_items: bool = False,
                log: Callable[[str], None] | None = print) -> RunResult:
    _run_store(run_dir)
    return RunResult.load(run_dir, trust_edited_items, log)


@dataclass
class StoredRows:
    """A stored run as a generations table needs it: each item's (id, pack, fields asked), in the run's order."""

    name: str
    dir: Path
    manifest: RunManifest
    items: list[tuple[str, str, int]]
    generations: dict[str, Generation]


def load_rows(run_dir: str | Path, trust_edited_items: bool = False,
              log: Callable[[str], None] | None = print) -> StoredRows:
    """`load_stored` without building Items when their recorded hash vouches for every line."""
    store = _run_store(run_dir, log)
    try:
        data = store.read_manifest()
    except ConfigError:
        data = {}
    rows = store.vouched_item_rows(data) if data else None
    if rows is None:
        run = RunResult.load(run_dir, trust_edited_items, log)
        return StoredRows(run.name, run.dir, run.manifest, [(it.id, it.pack, len(it.fields)) for it in run.items],
                          run.generations)
    manifest = manifest_model(data, store.manifest_path)
    return StoredRows(manifest.label or store.dir.name, store.dir, manifest,
                      [(r["id"], r["pack"], len(r.get("fields") or [])) for r in rows], store.read_samples())


def manifest_model(data: dict[str, Any], path: Path) -> RunManifest:
    """A manifest that does not fit the schema is refused like unreadable JSON (ConfigError naming the file)."""
    try:
        return RunManifest.model_validate(data)
    except ValidationError as exc:
        where, message = first_error(exc, RunManifest)
        raise ConfigError(f"the run's manifest does not fit its schema at {where or '(top level)'}: {message}",
                          file=path) from None


def stored_replicates(baseline: RunResult, trust_edited_items: bool = False,
                      log: Callable[[str], None] = print) -> list[RunResult]:
    """The baseline's replicates stored beside it (`<dir>-r1`, `-r2`, ... recorded as replicates)."""
    out = []
    for j in range(1, 1000):
        d = baseline.dir.with_name(f"{baseline.dir.name}-r{j}")
        if not (d / "manifest.json").exists():
            break
        run = RunResult.load(d, trust_edited_items, log)
        if run.manifest.role == "replicate" and run.manifest.key == baseline.manifest.key:
            out.append(run)
    return out


@dataclass
class Rescored:
    run_dir: Path
    manifest: RunManifest
    scored: list[ScoredItem]
    metrics: dict[str, PackMetrics]
    unanswered: list[str]
    # what reading the store found (skipped lines, unknown keys, an unverifiable items file)
    warnings: list[str] = field(default_factory=list)


def rescore(run_dir: str | Path, trust_edited_items: bool = False, log: Callable[[str], None] = print) -> Rescored:
    """Score a stored run again from its items and generations; no model is loaded.

    Refuses (ConfigError naming the file) a run whose manifest cannot be read or whose
    items.jsonl no longer matches the hash recorded when it ran, unless `trust_edited_items`."""
    store = _run_store(run_dir, log)
    data, items = store.read_checked(trust_edited_items)
    manifest = manifest_model(data, store.manifest_path)
    generations = store.read_samples()
    scored = score_run(items, generations)
    jsonl.write_atomic(store.dir / SCORES, scored)
    unanswered = [it.id for it in items if it.id not in generations]
    return Rescored(store.dir, manifest, scored, pack_metrics(scored), unanswered, store.warnings)
