"""The run store: one directory per run, generations appended as they are made.

`samples.jsonl` is appended and flushed per item, so a run killed at any point
loses at most the batch in flight; a torn last line (kill -9 mid-write) is cut
off on the next open. `manifest.json` is replaced atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from evals.types import Generation, Item

SAMPLES = "samples.jsonl"
MANIFEST = "manifest.json"
ITEMS = "items.jsonl"
SCORES = "scores.jsonl"


def run_key(payload: dict[str, Any]) -> str:
    """Hash of everything that can change an output."""
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class RunStore:
    """Reads and appends one run directory."""

    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir)

    @property
    def samples_path(self) -> Path:
        return self.dir / SAMPLES

    @property
    def manifest_path(self) -> Path:
        return self.dir / MANIFEST

    @property
    def items_path(self) -> Path:
        return self.dir / ITEMS

    def read_items(self) -> list[Item]:
        """The exact items the run was asked (prompts and gold), so scoring needs no model."""
        if not self.items_path.exists():
            return []
        return [Item.model_validate_json(line) for line in self.items_path.read_text(encoding="utf-8").splitlines() if line]

    def write_items(self, items: list[Item]) -> None:
        """Record items not yet recorded (a --limit run followed by a full one adds the rest)."""
        known = {it.id for it in self.read_items()}
        new = [it for it in items if it.id not in known]
        if not new:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.items_path.open("a", encoding="utf-8") as fh:
            for it in new:
                fh.write(it.model_dump_json() + "\n")

    def exists(self) -> bool:
        return self.manifest_path.exists()

    def read_samples(self, repair: bool = False) -> dict[str, Generation]:
        """Generations by item id; the first line for an id wins. With `repair`, a
        torn trailing line is truncated away so appends start on a clean line."""
        out: dict[str, Generation] = {}
        if not self.samples_path.exists():
            return out
        raw = self.samples_path.read_bytes()
        good_end = 0
        pos = 0
        for line in raw.splitlines(keepends=True):
            pos += len(line)
            if not line.endswith(b"\n"):
                break
            try:
                gen = Generation.model_validate_json(line)
            except ValueError:
                break
            out.setdefault(gen.item_id, gen)
            good_end = pos
        if repair and good_end < len(raw):
            with self.samples_path.open("r+b") as fh:
                fh.truncate(good_end)
        return out

    def append(self, gen: Generation) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.samples_path.open("a", encoding="utf-8") as fh:
            fh.write(gen.model_dump_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def read_manifest(self) -> dict[str, Any]:
        try:
            return json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.manifest_path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str), encoding="utf-8")
        tmp.replace(self.manifest_path)
