"""What a run is to the stages after generation: a prepared run (config, items,
key, directory) and a stored run read back (items, generations, manifest).
Data only, so the speed figures and the manifest can use them without
importing the executor that makes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from evalrun.contract.types import Generation, Item
from evalrun.evals.config import RunConfig
from evalrun.evals.store import RunStore
from evalrun.runners.models import ModelSource


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

    @property
    def store(self) -> RunStore:
        return RunStore(self.dir)

    @property
    def label(self) -> str:
        """The config's name, marked with the replicate for repeated runs (A/A)."""
        return self.config.name + (f"~r{self.replicate}" if self.replicate else "")


@dataclass
class RunResult:
    """A stored run as the later stages see it; built by `execute` or read back from disk."""

    name: str
    dir: Path
    items: list[Item]
    generations: dict[str, Generation]
    manifest: dict[str, Any]
    reused: bool = True
    generated: int = 0
    # what reading the store found (skipped lines, unknown keys, a rebuilt manifest)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, run_dir: str | Path, trust_edited_items: bool = False,
             log: Callable[[str], None] | None = None) -> "RunResult":
        """Read a run directory (no model): its items, generations and manifest. An unreadable
        manifest or edited items.jsonl is refused (ConfigError) unless `trust_edited_items`;
        every problem found on the way is passed to `log` and kept in `warnings`."""
        store = RunStore(run_dir, log=log)
        manifest, items = store.read_checked(trust_edited_items)
        replicate = manifest.get("replicate") or 0
        name = str(manifest.get("name", store.dir.name)) + (f"~r{replicate}" if replicate else "")
        generations = store.read_samples()
        return cls(name, store.dir, items, dict(generations), manifest, warnings=store.warnings)
