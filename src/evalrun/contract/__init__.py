"""The types every stage shares; it imports nothing else of evalrun, so every stage may depend on it."""

from evalrun.contract.manifest import SCHEMA_VERSION, RunManifest
from evalrun.contract.types import (
    CORRECT_OUTCOMES, Field, FieldKind, FieldScore, Generation, GenerationOverride, Item, Outcome,
)

__all__ = ["CORRECT_OUTCOMES", "SCHEMA_VERSION", "Field", "FieldKind", "FieldScore", "Generation", "GenerationOverride",
           "Item", "Outcome", "RunManifest"]
