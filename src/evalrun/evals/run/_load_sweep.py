"""Load sweeps: each config at each value of a load knob, its throughput-latency curve and the best setting
under an SLO (docs/speed.md, 'Load sweeps'). Every point is timed fresh in a directory of its own: the openai
run key ignores concurrency and request rate (they change no output), and samples timed at another load would
be another curve."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence

from pydantic import BaseModel, Field

from evalrun.contract.manifest import Distribution, Goodput  # the stored form: one definition
from evalrun.contract.types import Generation, GenerationOverride
from evalrun.evals.timing import SLO, latency
from evalrun.evals.files import ConfigError, store_files
from evalrun.evals.config import (
    Number, RunConfig, Workload, check_knob, config_slo, point_config, value_label, with_workload,
)
from evalrun.evals.run._execute import Progress, RunFailed, prepare, set_aside
from evalrun.evals.run.confirm import execute_run
from evalrun.evals.store import run_lock
from evalrun.evals.results import PreparedRun, RunResult
from evalrun.runners.models import ModelError, ModelNotFound

SCHEMA_VERSION = 1


class LoadPoint(BaseModel):
    """One knob value's run: what it did and how fast."""

    value: Number
    run_dir: str = ""
    requests: int = 0
    completed: int = 0
    failed: int = 0
    duration_seconds: float = 0.0  # evals.timing.latency's duration: the union of the requests' intervals
    wall_seconds: float = 0.0  # first request sent to last one finished, idle time included
    request_throughput: Optional[float] = None
    output_throughput: Optional[float] = None
    total_token_throughput: Optional[float] = None
    ttft: Distribution = Field(default_factory=Distribution)
    tpot: Distribution = Field(default_factory=Distribution)
    itl: Distribution = Field(default_factory=Distribution)
    e2el: Distribution = Field(default_factory=Distribution)
    goodput: Optional[Goodput] = None
    effective: Optional[int] = None  # hf: the largest batch the runner actually ran
    note: Optional[str] = None  # why the load run is not the load asked for


class LoadCurve(BaseModel):
    """One config's points in knob order and the best of them."""

    config: str
    source: str = ""
    runner: str = "hf"
    knob: str
    slo: Optional[str] = None
    points: list[LoadPoint] = Field(default_factory=list)
    best: Optional[int] = None
    summary: str = ""


class LoadSweep(BaseModel):
    """What `evalrun sweep --load` prints and writes as JSON."""

    schema_version: int = SCHEMA_VERSION
    kind: str = "evalrun.load_sweep"
    knob: str
    values: list[Number]
    workload: Optional[str] = None
    limit: Optional[int] = None
    definitions: str = "vLLM bench serve (evalrun.evals.timing.latency)"
    curves: list[LoadCurve] = Field(default_factory=list)


def point_metrics(value: Number, gens: Sequence[Generation], slo: SLO | None = None, knob: str = "batch_size",
                  run_dir: str = "", runner_batch: int | None = None) -> LoadPoint:
    """A point's figures, noted where the load run was less than asked; `runner_batch`: the batch size the
    runner ended at (manifest `batching.final`)."""
    m = latency.request_metrics(gens, latency.PERCENTILES, slo)
    point = LoadPoint(value=value, run_dir=run_dir, **{k: m[k] for k in (  # pyright: ignore[reportArgumentType]
        "requests", "completed", "failed", "duration_seconds", "request_throughput", "output_throughput",
        "total_token_throughput")}, **{k: Distribution(**m[k]) for k in latency.METRICS},
        goodput=Goodput(**m["goodput"]) if "goodput" in m else None)
    point.wall_seconds = round(_wall(gens), 6)
    point.effective, point.note = _shortfall(point, gens, knob, value, runner_batch)
    return point


def _wall(gens: Sequence[Generation]) -> float:
    spans = [(g.started_at, g.started_at + g.seconds) for g in gens
             if g.error is None and g.started_at is not None and g.seconds > 0]
    return max(b for _, b in spans) - min(a for a, _ in spans) if spans else 0.0


def _shortfall(point: LoadPoint, gens: Sequence[Generation], knob: str, value: Number,
               runner_batch: int | None) -> tuple[int | None, str | None]:
    """(the batch the hf runner ran, a note where the load run differs from the load asked)."""
    effective, notes = None, []
    if knob == "batch_size" and gens:
        effective = max(g.batch_size for g in gens)
        if effective < value:
            capped = runner_batch is not None and runner_batch < value
            why = ("the runner capped it: an acceleration's limit or out-of-memory halving" if capped
                   else "fewer requests per shape than the batch")
            notes.append(f"ran at batch_size {effective} ({why})")
    elif knob == "concurrency" and 0 < len(gens) < value:
        notes.append(f"only {len(gens)} requests: at most {len(gens)} in flight")
    elif knob == "request_rate" and point.wall_seconds > 0 and point.duration_seconds < 0.95 * point.wall_seconds:
        idle = 1 - point.duration_seconds / point.wall_seconds
        notes.append(f"no request in flight for {idle:.0%} of the wall clock: req/s counts busy time only "
                     f"(evals.timing.latency); {point.completed / point.wall_seconds:.3g} req/s over the whole "
                     "wall clock")
    return effective, "; ".join(notes) or None


def best_index(points: Sequence[LoadPoint], slo_given: bool) -> int | None:
    """The best point (docs/speed.md, 'Load sweeps'), None when none qualifies. A point the runner capped to
    the load an earlier point ran at is that setting again, not a candidate of its own."""
    scored = []
    ran: set[float] = set()
    for i, p in enumerate(points):
        load = float(p.effective if p.effective is not None else p.value)
        if load in ran:
            continue
        ran.add(load)
        if slo_given:
            score = p.goodput.rate if p.goodput is not None and p.goodput.good > 0 else None
        else:
            score = p.request_throughput if p.completed > 0 else None
        if score is not None and score > 0:
            scored.append((score, -i))
    return -max(scored)[1] if scored else None


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def summary_sentence(curve: LoadCurve) -> str:
    """'best batch_size 4: 3.1 req/s, 2.9 good req/s under ttft<=500ms', or why there is none."""
    if curve.best is None:
        if curve.slo:
            return f"no setting meets the SLO ({curve.slo})"
        return "no setting completed a request"
    p = curve.points[curve.best]
    head = f"best {curve.knob} {value_label(p.value)}: {_rate(p.request_throughput)} req/s"
    if curve.slo and p.goodput is not None:
        return (f"{head}, {_rate(p.goodput.rate)} good req/s under {curve.slo} "
                f"({p.goodput.good} of {p.goodput.requests} requests good)")
    return f"{head}, {_rate(p.output_throughput)} output tok/s (highest request throughput; no SLO given)"


def make_curve(config: RunConfig, knob: str, points: list[LoadPoint], slo: SLO | None) -> LoadCurve:
    given = slo is not None and slo.given()
    curve = LoadCurve(config=config.name, source=config.source, runner=config.runner, knob=knob,
                      slo=slo.text() if given and slo is not None else None, points=points,
                      best=best_index(points, given))
    curve.summary = summary_sentence(curve)
    return curve


def point_dir(out: str | Path, knob: str, value: Number) -> Path:
    """Where one knob value's runs live: apart from every other load's."""
    return Path(out) / "load" / f"{knob}-{value_label(value)}"


def _prepare(config: RunConfig, out: Path, limit: int | None) -> PreparedRun:
    store_files.check_out(out)  # a file or a read-only folder: exit 2 before anything is built
    try:
        return prepare(config, out, limit)
    except ModelNotFound as exc:
        raise ConfigError(str(exc), file=config.source, path="model") from None
    except ModelError as exc:
        raise RunFailed(f"{config.name}: {exc}") from exc


def _warm_up(config: RunConfig, out: Path, log: Callable[[str], None]) -> None:
    """One short untimed request per config before its first point, on a runner of its own, so
    the first point does not carry the process's one-time costs (kernels, allocator, connection)."""
    prepared = _prepare(config, out, 1)
    if not prepared.items:
        return
    item = prepared.items[0]
    asked = item.generation
    short = GenerationOverride(max_new_tokens=min(8, asked.max_new_tokens if asked else 8),
                               ignore_eos=bool(asked and asked.ignore_eos))
    item = item.model_copy(update={"generation": short})
    try:
        prepared.runner.run(prepared.request([item], run_items=[item]), lambda g: None)
    except Exception as exc:  # noqa: BLE001 - the timed run reports a real failure properly
        log(f"{config.name}: warm-up request failed ({type(exc).__name__}: {exc}); the points run anyway")


def load_sweep(configs: list[RunConfig], knob: str, values: list[Number], slo: SLO | None = None,
               out: str | Path = "runs", limit: int | None = None, log: Callable[[str], None] = print,
               progress_factory: Callable[[], Progress] | None = None, workload: Workload | None = None,
               warmup: bool = True) -> LoadSweep:
    """Every config at every knob value (ascending); `slo` overrides each config's own `slo:`. Every point is
    validated and prepared before anything runs."""
    values = sorted(values)
    if not configs or not values:
        raise ConfigError("a load sweep needs at least one config and one knob value", path="--load")
    if len(set(values)) != len(values):
        raise ConfigError(f"{knob}: a value is given twice ({values})", path="--load")
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise ConfigError(f"two configs share the name {next(n for n in names if names.count(n) > 1)!r}; "
                          "give each a distinct `name`")
    for config in configs:
        check_knob(config, knob)
    slos = [slo if slo is not None else config_slo(c) for c in configs]
    variants = [[point_config(with_workload(c, workload), knob, v) for v in values] for c in configs]
    plans = [[_prepare(pc, point_dir(out, knob, v), limit) for pc, v in zip(row, values)] for row in variants]
    curves = []
    total, done = len(configs) * len(values), 0
    for config, row, chosen in zip(configs, plans, slos):
        if warmup:
            _warm_up(row[0].config, Path(out) / "load", log)
        points = []
        for value, prepared in zip(values, row):
            done += 1
            log(f"load point {done}/{total}: {config.name} at {knob}={value_label(value)} ({prepared.dir})")
            result = _timed_fresh(prepared, progress_factory() if progress_factory else None, log)
            prepared.runner = None  # a weight-modifying method's private model copy goes with it
            final = result.manifest.batching.final if result.manifest.batching else None
            points.append(point_metrics(value, _ordered(result), chosen, knob, str(result.dir), final))
        curves.append(make_curve(config, knob, points, chosen))
    return LoadSweep(knob=knob, values=values, workload=workload.text() if workload else None, limit=limit,
                     curves=curves)


def _timed_fresh(prepared: PreparedRun, progress: Progress | None, log: Callable[[str], None]) -> RunResult:
    """Generate the point's run from scratch: a stored one (an earlier sweep's) is moved aside first,
    never reused, since its samples were timed in another session, perhaps at another load."""
    if prepared.dir.exists():
        with run_lock(prepared.dir, log, prepared.label):  # never move a run from under its writer
            moved = set_aside(prepared.dir)
        if moved:
            log(f"{prepared.label}: every load point is timed afresh: the stored run was moved to {moved}")
    return execute_run(prepared, progress, log, fresh=False)


def _ordered(result: RunResult) -> list[Generation]:
    return [result.generations[it.id] for it in result.items if it.id in result.generations]
