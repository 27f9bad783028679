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
from evals.execute import Progress, RunFailed, RunResult, execute, prepare, set_aside
from evals.gate import GateConfig, Verdict, evaluate, load_gate
from evals.metrics import PackMetrics, pack_metrics
from evals.pairing import Comparison, pair
from evals.scoring import ScoredItem, score_run
from evals.store import SCORES, RunStore
from evals.types import Item
from runners.models import ModelError, ModelNotFound, load_tokenizer, resolve_model
from tasks import get_pack


def load(path: str | Path) -> RunConfig:
    return load_config(path)


def _prepare(config: RunConfig, out: str | Path, limit: int | None, replicate: int = 0):  # type: ignore[no-untyped-def]
    try:
        return prepare(config, out, limit, replicate)
    except ModelNotFound as exc:
        # the model spec names nothing usable, or its package is missing: a configuration problem
        raise ConfigError(str(exc), file=config.source, path="model") from None
    except ModelError as exc:
        raise RunFailed(f"{config.name}: {exc}") from exc


def run(
    config: RunConfig,
    out: str | Path = "runs",
    limit: int | None = None,
    progress: Progress | None = None,
    log: Callable[[str], None] = print,
    replicate: int = 0,
    fresh: bool = False,
) -> RunResult:
    """Generate (or resume, or reuse) one configuration's run; `fresh` sets a stored run aside first."""
    prepared = _prepare(config, out, limit, replicate)
    if fresh:
        moved = set_aside(prepared.dir)
        if moved:
            log(f"{prepared.label}: --fresh: previous run moved to {moved}")
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
    except ModelNotFound as exc:
        raise ConfigError(str(exc), path="--model") from None
    except ModelError as exc:
        raise RunFailed(str(exc)) from exc
    from tasks import PackDataError

    try:
        return spec.items(validated, lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"]))
    except PackDataError as exc:
        raise ConfigError(exc.message, file="--param", path=exc.key) from None


@dataclass
class CompareReport:
    """Everything a renderer needs: the runs, their scores and metrics, each
    candidate's comparison and verdict, and the A/A noise floor if one was run."""

    baseline: RunResult
    candidates: list[RunResult]
    comparisons: list[Comparison]
    verdicts: list[Verdict]
    metrics: dict[str, dict[str, PackMetrics]]
    scored: dict[str, list[ScoredItem]]
    noise_floor: Comparison | None = None
    noise_floor_run: RunResult | None = None

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)


def compare_results(
    baseline: RunResult,
    candidates: list[tuple[RunResult, GateConfig | None]],
    gate: GateConfig | None = None,
    noise_floor: RunResult | None = None,
) -> CompareReport:
    """Score, pair and gate stored results; no model is involved from here on.

    `gate` (e.g. from --gate) overrides each candidate's own; the noise-floor
    run is compared but never gated.
    """
    base_scored = score(baseline)
    report = CompareReport(baseline, [], [], [], {baseline.name: pack_metrics(base_scored)},
                           {baseline.name: base_scored})

    def add(result: RunResult, chosen: GateConfig) -> Comparison:
        cand_scored = score(result)
        report.scored[result.name] = cand_scored
        report.metrics[result.name] = pack_metrics(cand_scored)
        return pair(base_scored, cand_scored, baseline.name, result.name, confidence=chosen.confidence)

    if noise_floor is not None:
        report.noise_floor = add(noise_floor, gate or GateConfig())
        report.noise_floor_run = noise_floor
    for result, cand_gate in candidates:
        chosen = gate or cand_gate or GateConfig()
        comparison = add(result, chosen)
        report.candidates.append(result)
        report.comparisons.append(comparison)
        report.verdicts.append(evaluate(comparison, chosen))
    return report


def compare(
    baseline: RunConfig,
    candidates: list[RunConfig],
    out: str | Path = "runs",
    limit: int | None = None,
    progress_factory: Callable[[], Progress] | None = None,
    log: Callable[[str], None] = print,
    gate: GateConfig | None = None,
    noise_floor: bool = False,
    fresh: bool = False,
) -> CompareReport:
    """Run (or reuse) the baseline and every candidate, pair each with the baseline and gate it.

    A candidate with the baseline's name is a repeat of it (an A/A comparison):
    it is generated again as a replicate instead of reusing the stored run.
    `noise_floor` adds that A/A comparison to any compare.
    """
    seen: dict[str, RunConfig] = {}
    for c in [baseline, *candidates]:
        if c.name in seen and c.model_dump(exclude={"source"}) != seen[c.name].model_dump(exclude={"source"}):
            raise ConfigError(f"two different configurations share the name {c.name!r}; give each a distinct `name`")
        seen[c.name] = c

    def go(config: RunConfig, replicate: int = 0) -> RunResult:
        return run(config, out, limit, progress_factory() if progress_factory else None, log, replicate, fresh)

    replicas: dict[str, int] = {baseline.name: 0}
    base_result = go(baseline)
    aa = None
    if noise_floor:
        replicas[baseline.name] = 1
        aa = go(baseline, 1)
    cand_results = []
    for cand in candidates:
        replicas[cand.name] = replicas[cand.name] + 1 if cand.name in replicas else 0
        cand_results.append((go(cand, replicas[cand.name]), cand.gate))
    return compare_results(base_result, cand_results, gate, aa)


def compare_stored(run_dirs: list[str | Path], gate: GateConfig | None = None) -> CompareReport:
    """Re-compare stored runs, the first as the baseline, without loading any model."""
    results = []
    for d in run_dirs:
        store = RunStore(d)
        if not store.exists() or not store.items_path.exists():
            raise ConfigError("not a run directory (needs manifest.json and items.jsonl)", file=d)
        results.append(RunResult.load(d))
    names = [r.name for r in results]
    if len(set(names)) != len(names):
        raise ConfigError(f"the same run is given twice ({', '.join(names)})")
    stored_gates = [load_gate(r.manifest.get("config", {}).get("gate"), r.dir / "manifest.json") for r in results[1:]]
    return compare_results(results[0], list(zip(results[1:], stored_gates)), gate)
