"""The timing-accuracy scenarios, shared by tests/runners/test_timing_accuracy.py and
benchmarks/timing_accuracy.py: run the real openai runner (through `prepare` and `execute`,
as `evalrun run` does) against the timed server, then set the speed metrics it stored beside
the ground truth the server injected, percentile by percentile and request by request.

Two truths are kept apart: `injected` is the schedule the server meant (TTFT and gaps counted
from when each request had arrived), `sent` is what it actually put on the wire (its own send
timestamps). measured - sent is the runner's error alone; sent - injected is the server's."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun.contract.types import Generation, Item
from evalrun.evals.timing import METRICS, PERCENTILES, SLO, latency, pkey, request_metrics
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from tests.fakes.openai_server import RequestRecord, ServerState, Timing, timed_server

REL_TOL = 0.05
ABS_TOL = 0.002  # seconds
SLO_MARGIN = 0.005  # every injected value this far from its SLO, so goodput's truth is not a coin toss


def tolerance(truth: float) -> float:
    """5% or 2 ms, whichever is larger."""
    return max(REL_TOL * abs(truth), ABS_TOL)


@dataclass(frozen=True)
class Scenario:
    """One load on the timed server: how many requests, how many at once, their timings and the SLO."""

    name: str
    concurrency: int
    requests: int
    timing: Timing
    slo: SLO
    output_tokens: int = 20
    input_tokens: int = 64
    request_rate: float | None = None  # Poisson arrivals (the runner's own), None: all at once


SCENARIOS: dict[str, Scenario] = {
    # one at a time, no jitter, no tail: every request the same
    "c1": Scenario("c1", 1, 20, Timing(ttft_ms=40, gap_ms=5), SLO(ttft=0.060, tpot=0.011)),
    # 8 at once, gaps 5 +- 2 ms, TTFT 40 +- 5 ms; a quarter of the requests 3x as slow to their first token
    "c8": Scenario("c8", 8, 64, Timing(ttft_ms=40, gap_ms=5, jitter_ms=2, ttft_jitter_ms=5, seed=8, slow_share=0.25,
                                       slow_ttft_factor=3), SLO(ttft=0.080)),
    # up to 32 at once (Poisson arrivals at 70/s keep 32 in flight), gaps 20 +- 2 ms; an eighth decode 2.5x slower
    "c32": Scenario("c32", 32, 160, Timing(ttft_ms=40, gap_ms=20, jitter_ms=2, ttft_jitter_ms=5, seed=32,
                                           slow_share=0.125, slow_gap_factor=2.5),
                    SLO(ttft=0.060, tpot=0.035, e2el=0.700), request_rate=70.0),
}

# the same loads with every request in lockstep (no TTFT jitter, all sent at once) and, for 32, 5 ms
# gaps (6,400 chunks/s): what a single Python client can still stamp; the benchmark shows, no test asserts
STRESS: dict[str, Scenario] = {
    "c8-lockstep": Scenario("c8-lockstep", 8, 64, Timing(ttft_ms=40, gap_ms=5, jitter_ms=2, seed=8),
                            SLO(ttft=0.060)),
    "c32-lockstep-5ms": Scenario("c32-lockstep-5ms", 32, 128, Timing(ttft_ms=40, gap_ms=5, jitter_ms=2, seed=32),
                                 SLO(ttft=0.060)),
}


@dataclass
class ServedRun:
    """What the runner stored and what the server injected, for one scenario."""

    scenario: Scenario
    generations: list[Generation]
    items: dict[str, Item]
    state: ServerState
    manifest: Any
    wall_seconds: float
    runner: Any = None  # the OpenAIRunner that ran it (its `arrivals` schedule, its manifest extras)

    def record_of(self, gen: Generation) -> RequestRecord:
        """The server's record of the request that produced `gen` (matched by the prompt it sent)."""
        prompt = self.items[gen.item_id].prompt
        (record,) = [r for r in self.state.records if r.prompt == prompt]
        return record


def config_for(s: Scenario, base_url: str) -> dict[str, Any]:
    """A run config of the latency pack against the timed server; no retries, which would add requests."""
    openai: dict[str, Any] = {"base_url": base_url, "concurrency": s.concurrency, "timeout": 30, "max_retries": 0}
    if s.request_rate:
        openai["request_rate"] = s.request_rate
    return {
        "name": f"timing-{s.name}", "runner": "openai", "model": "smollm2-135m", "openai": openai,
        "tasks": [{"pack": "latency", "count": s.requests,
                   "shapes": [{"name": "s", "input_tokens": s.input_tokens, "output_tokens": s.output_tokens}]}],
    }


def run_served(s: Scenario, out_dir: Path, process: bool = True) -> ServedRun:
    """Every request of the scenario through the real runner; the generations as stored."""
    with timed_server(s.timing, process=process) as (base_url, state):
        prepared = prepare(parse_config(config_for(s, base_url)), out_dir)
        t0 = time.perf_counter()
        result = execute(prepared, log=lambda _m: None)
        wall = time.perf_counter() - t0
    gens = [result.generations[it.id] for it in result.items]
    return ServedRun(s, gens, {it.id: it for it in result.items}, state, result.manifest, wall, prepared.runner)


@dataclass(frozen=True)
class Row:
    """One metric at one percentile: injected, what the server actually sent, what the runner measured."""

    scenario: str
    metric: str
    pct: str
    injected: float
    sent: float
    measured: float

    @property
    def error(self) -> float:
        return self.measured - self.injected

    @property
    def error_pct(self) -> float:
        return 100.0 * self.error / self.injected if self.injected else 0.0

    @property
    def ok(self) -> bool:
        """Within 5% or 2 ms of the injected value."""
        return abs(self.error) <= tolerance(self.injected)

    @property
    def runner_ok(self) -> bool:
        """Within 5% or 2 ms of what the server actually sent (the runner's own error)."""
        return abs(self.measured - self.sent) <= tolerance(self.sent)


def percentile_rows(run: ServedRun, percentiles: tuple[float, ...] = PERCENTILES) -> list[Row]:
    """TTFT, TPOT, ITL and E2EL at every percentile, from `evals.timing.latency.request_metrics` and from the truth."""
    measured = request_metrics(run.generations, percentiles, run.scenario.slo)
    rows = []
    for metric in METRICS:
        truth = run.state.distribution(metric, percentiles)
        sent = run.state.distribution(metric, percentiles, "actual")
        for q in percentiles:
            key = pkey(q)
            rows.append(Row(run.scenario.name, metric, key, truth[key], sent[key], measured[metric][key]))
    return rows


def request_errors(run: ServedRun, source: str = "actual") -> dict[str, float]:
    """The worst per-request error (measured - truth, seconds, largest in size) of each metric,
    every generation matched to the request that produced it; ITL gap by gap. `source`:
    `actual` (the server's send times) or `intended` (its schedule)."""
    worst: dict[str, float] = {m: 0.0 for m in METRICS}
    for gen in run.generations:
        rec = run.record_of(gen)
        got = {"ttft": [latency.ttft(gen)], "tpot": [latency.tpot(gen)], "e2el": [latency.e2el(gen)],
               "itl": latency.itl(gen)}
        for metric in METRICS:
            want = getattr(rec, source)(metric)
            assert len(got[metric]) == len(want), (metric, gen.item_id, len(got[metric]), len(want))
            for g, w in zip(got[metric], want):
                assert g is not None, (metric, gen.item_id)
                if abs(g - w) > abs(worst[metric]):
                    worst[metric] = g - w
    return worst


def server_lateness(state: ServerState) -> list[float]:
    """Seconds each text chunk went out after its deadline (the server's own scheduling error)."""
    late = []
    for rec in state.finished():
        deadline = rec.arrived + rec.ttft
        for k, sent in enumerate(rec.sent):
            if k:
                deadline += rec.gaps[k - 1]
            late.append(sent - deadline)
    return late


def meets_intended(rec: RequestRecord, slo: SLO) -> bool:
    """Whether the request was injected to meet every SLO given."""
    checks = ((slo.ttft, rec.intended("ttft")[0]), (slo.tpot, (rec.intended("tpot") or [0.0])[0]),
              (slo.e2el, rec.intended("e2el")[0]))
    return all(value <= limit for limit, value in checks if limit is not None)


def slo_margin(state: ServerState, slo: SLO) -> float:
    """The smallest distance between an injected value and its SLO (seconds)."""
    gaps = []
    for rec in state.finished():
        for limit, metric in ((slo.ttft, "ttft"), (slo.tpot, "tpot"), (slo.e2el, "e2el")):
            if limit is not None:
                gaps += [abs(v - limit) for v in rec.intended(metric)]
    return min(gaps)


def goodput_check(run: ServedRun) -> tuple[int, int, float]:
    """(injected good count, measured good count, smallest SLO margin in seconds)."""
    slo = run.scenario.slo
    truth = sum(1 for r in run.state.finished() if meets_intended(r, slo))
    measured = request_metrics(run.generations, PERCENTILES, slo)["goodput"]["good"]
    return truth, measured, slo_margin(run.state, slo)
