"""The run store: one directory per run, one writer at a time, and the per-token
distributions stored beside the generations. A light import (no scorer, gate or scipy)."""

from __future__ import annotations

from evalrun.evals.store._store import RunStore, SCORES, items_sha256, lines_sha256, run_key, run_lock, v1_items_sha256

__all__ = ["RunStore", "SCORES", "items_sha256", "lines_sha256", "run_key", "run_lock", "v1_items_sha256"]
