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

from evals.types import Generation

SAMPLES = "samples.jsonl"
MANIFEST = "manifest.json"


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
