"""What a run is to the stages after generation: a prepared run and its stored form (scored again by
`rescore`), the served engine of an `openai` config, and which baseline replicates measure the noise."""

from __future__ import annotations

from evalrun.evals.results._runs import (
    Interleaved, PreparedRun, Rescored, RunResult, StoredRows, load_rows, load_stored, manifest_model, rescore,
    stored_replicates, without_secrets,
)
from evalrun.evals.results.served import openai_runner

__all__ = [
    "Interleaved", "PreparedRun", "Rescored", "RunResult", "StoredRows", "load_rows", "load_stored", "manifest_model",
    "openai_runner", "rescore", "stored_replicates", "without_secrets",
]
