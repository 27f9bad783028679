"""The Python API behind the CLI: load configs, run them, score, compare, gate.

    from evals import api
    base, cand = api.load("configs/baseline.yaml"), api.load("configs/int4kv.yaml")
    report = api.compare(base, [cand])
    report.passed
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evals.config import ConfigError, RunConfig, load_config
from evals.execute import Progress, RunFailed, RunResult, execute, prepare
from evals.gate import Verdict, default_gate
from evals.pairing import Comparison, pair
from evals.scoring import ScoredItem, score_run
from runners.models import ModelError


def load(path: str | Path) -> RunConfig:
    return load_config(path)


def _prepare(config: RunConfig, out: str | Path, limit: int | None):  # type: ignore[no-untyped-def]
    try:
        return prepare(config, out, limit)
    except ModelError as exc:
        # the model spec itself is wrong or its package is missing: a configuration problem
        raise ConfigError(str(exc), file=config.source, path="model") from None


def run(
    config: RunConfig,
    out: str | Path = "runs",
    limit: int | None = None,
    progress: Progress | None = None,
    log: Callable[[str], None] = print,
) -> RunResult:
    prepared = _prepare(config, out, limit)
    try:
        return execute(prepared, progress=progress, log=log)
    except ModelError as exc:
        raise RunFailed(f"{config.name}: {exc}") from exc


def score(result: RunResult) -> list[ScoredItem]:
    return score_run(result.items, result.generations)


@dataclass
class CompareReport:
    baseline: RunResult
    candidates: list[RunResult]
    comparisons: list[Comparison]
    verdicts: list[Verdict]

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)


def compare(
    baseline: RunConfig,
    candidates: list[RunConfig],
    out: str | Path = "runs",
    limit: int | None = None,
    progress_factory: Callable[[], Progress] | None = None,
    log: Callable[[str], None] = print,
) -> CompareReport:
    """Run (or reuse) the baseline and every candidate, pair each candidate with the baseline and gate it."""
    names = [c.name for c in [baseline, *candidates]]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ConfigError(f"two configurations share the name {dup!r}; give each a distinct `name`")
    base_result = run(baseline, out, limit, progress_factory() if progress_factory else None, log)
    base_scored = score(base_result)
    cand_results, comparisons, verdicts = [], [], []
    for cand in candidates:
        result = run(cand, out, limit, progress_factory() if progress_factory else None, log)
        comparison = pair(base_scored, score(result), baseline.name, cand.name)
        cand_results.append(result)
        comparisons.append(comparison)
        verdicts.append(default_gate(comparison))
    return CompareReport(base_result, cand_results, comparisons, verdicts)
