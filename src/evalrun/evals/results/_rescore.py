"""Scoring a stored run again from its items and generations, with no model loaded."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from evalrun.contract.manifest import RunManifest
from evalrun.evals.files import ConfigError, jsonl
from evalrun.evals.results._runs import manifest_model
from evalrun.evals.scoring import PackMetrics, ScoredItem, pack_metrics, score_run
from evalrun.evals.store import SCORES, RunStore


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
    store = RunStore(run_dir, log=log)
    if not store.exists() or not store.items_path.exists():
        raise ConfigError("not a run directory (needs manifest.json and items.jsonl)", file=run_dir)
    data, items = store.read_checked(trust_edited_items)
    manifest = manifest_model(data, store.manifest_path)
    generations = store.read_samples()
    scored = score_run(items, generations)
    jsonl.write_atomic(store.dir / SCORES, scored)
    unanswered = [it.id for it in items if it.id not in generations]
    return Rescored(store.dir, manifest, scored, pack_metrics(scored), unanswered, store.warnings)
