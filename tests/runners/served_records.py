"""Checks on what a served run stored, shared by the real-engine tests."""

from __future__ import annotations

import json
from pathlib import Path


def assert_served_logprobs(run_dir: Path) -> None:
    """The engine's top-k logprobs are stored as the in-process runner's are: token ids that decode to
    each answer, so the first divergent token and drift work on served runs too."""
    from evalrun.evals.store import dists as dists_store
    from evalrun.runners.logprobs import TokenDists

    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["server"]["logprobs"]["answers_without"] == 0, manifest["server"]["logprobs"]
    stored = dists_store.read(run_dir, TokenDists)
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert stored.records and not stored.problems and len(stored.records) == len(samples)
    for g in samples:
        record = stored.records[g["item_id"]]
        # k: the 20 asked, less any alternative that is part of a UTF-8 character (sent as "", left to the rest)
        assert record.ids.tolist() == g["output_ids"] and 12 <= record.k <= 20, record.k
        assert (record.top_logprobs[:, 0] >= record.top_logprobs[:, -1]).all() and (record.rest_logprob <= 0).all()
