"""Comparing a candidate with its baseline item by item: pairing, flips, the per-field table with its intervals,
the context-length buckets every slice by length uses, and character diffs of two values."""

from __future__ import annotations

from evalrun.evals.compare._buckets import bucket_edge, edge_label, length_bucket
from evalrun.evals.compare._field_table import FieldDelta, candidate_outcome
from evalrun.evals.compare._pairing import (
    Comparison, Flip, PackComparison, PairingError, attribute, display_value, pair, slices,
)
from evalrun.evals.compare.diffs import diffable, opcodes, segments

__all__ = [
    "Comparison", "FieldDelta", "Flip", "PackComparison", "PairingError", "attribute", "bucket_edge", "candidate_outcome",
    "diffable", "display_value", "edge_label", "length_bucket", "opcodes", "pair", "segments", "slices",
]
