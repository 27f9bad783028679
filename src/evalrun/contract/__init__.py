"""The contract at the bottom of evalrun: the types every stage shares.

Tasks make Items, runners make Generations, evals score them into
FieldScores, and the run manifest records what a run did. This package
imports nothing else of evalrun, so every stage may depend on it and it on none.
"""

from evalrun.contract.manifest import SCHEMA_VERSION, RunManifest
from evalrun.contract.types import (
    CORRECT_OUTCOMES,
    Field,
    FieldKind,
    FieldScore,
    Generation,
    GenerationOverride,
    Item,
    Outcome,
)

__all__ = ["CORRECT_OUTCOMES", "SCHEMA_VERSION", "Field", "FieldKind", "FieldScore", "Generation", "GenerationOverride",
           "Item", "Outcome", "RunManifest"]
