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
from evals.metrics import PackMetrics, pack_metrics
from evals.pairing import Comparison, pair
from evals.scoring import ScoredItem, score_run
from evals.store import SCORES, RunStore
from evals.types import Item
from runners.models import ModelError, load_tokenizer, resolve_model
from tasks import get_pack


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
class Rescored:
    run_dir: Path
    manifest: dict
    scored: list[ScoredItem]
    metrics: dict[str, PackMetrics]
    unanswered: list[str]


def rescore(run_dir: str | Path) -> Rescored:
    """Score a stored run again from its items and generations; no model is loaded."""
    store = RunStore(run_dir)
    if not store.exists() or not store.items_path.exists():
        raise ConfigError("not a run directory (needs manifest.json and items.jsonl)", file=run_dir)
    items = store.read_items()
    generations = store.read_samples()
    scored = score_run(items, generations)
    tmp = store.dir / f"{SCORES}.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        for s in scored:
            fh.write(s.model_dump_json() + "\n")
    tmp.replace(store.dir / SCORES)
    unanswered = [it.id for it in items if it.id not in generations]
    return Rescored(store.dir, store.read_manifest(), scored, pack_metrics(scored), unanswered)


def export_pack(name: str, params: dict, model: str = "smollm2-135m") -> list[Item]:
    """The items a run would see for these pack parameters, sized with `model`'s tokenizer."""
    from pydantic import ValidationError

    from evals.config import validation_error

    try:
        spec = get_pack(name)
    except KeyError as exc:
        raise ConfigError(str(exc.args[0]), path="pack") from None
    try:
        validated = spec.params.model_validate(params, context={"base_dir": Path.cwd()})
    except ValidationError as exc:
        raise validation_error(exc, "--param", "", spec.params) from None
    try:
        tokenizer = load_tokenizer(resolve_model(model))
    except ModelError as exc:
        raise ConfigError(str(exc), path="--model") from None
    return spec.build(validated, lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"]))


@dataclass
class CompareReport:
    baseline: RunResult
    candidates: list[RunResult]
    comparisons: list[Comparison]
    verdicts: list[Verdict]
    metrics: dict[str, dict[str, PackMetrics]]

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
    metrics = {baseline.name: pack_metrics(base_scored)}
    cand_results, comparisons, verdicts = [], [], []
    for cand in candidates:
        result = run(cand, out, limit, progress_factory() if progress_factory else None, log)
        cand_scored = score(result)
        comparison = pair(base_scored, cand_scored, baseline.name, cand.name)
        metrics[cand.name] = pack_metrics(cand_scored)
        cand_results.append(result)
        comparisons.append(comparison)
        verdicts.append(default_gate(comparison))
    return CompareReport(base_result, cand_results, comparisons, verdicts, metrics)
