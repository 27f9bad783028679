"""The speed metrics are accurate: the real openai runner against a real loopback server whose
timings are injected (tests/fakes/openai_server.py `timed_server`), and the hf runner on a model whose
forward calls take a known time (tests/runners/paced_model.py). No mocks: real HTTP, real SSE,
real sleeps, the metrics read back from the run store by `evals.timing.latency.request_metrics`.

Every figure is held to 5% or 2 ms (whichever is larger) at p50, p90, p95 and p99, both
against the schedule the server meant and against what it actually sent (the runner's own
error). A machine shared with other jobs delays a thread now and then by milliseconds, so a
load is tried up to ATTEMPTS times and the first clean attempt passes; every attempt's worst
errors are printed, and a failure shows the whole table and whose error it was.

Beside every attempt a probe process (tests/runners/noise_probe.py) measures how late the
machine wakes a waiting thread. When no attempt is clean but the machine was busy (the probe
woke over NOISY late at p99, or the server's own sends missed their schedule by the whole
2 ms), 2 ms cannot be checked there: the best attempt must still be within 25% or 10 ms (which
every gross error, such as the send time taken before httpx's own work or a GC pause inside
a stream, is far past), and the test skips with the figures rather than pass on a looser
bound. On a quiet machine a miss fails."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evalrun.evals.config import parse_config
from evalrun.evals.run import prepare
from evalrun.evals.timing import SLO
from evalrun.evals.stats import percentile
from evalrun.runners.base import RunRequest
from tests.machine import loaded, skip_if_loaded
from tests.runners.noise_probe import scheduling_noise
from tests.runners.paced_model import ForwardPacer, calibrate
from tests.fakes.openai_server import Timing
from tests.runners.timing_scenarios import (
    ABS_TOL, SCENARIOS, SLO_MARGIN, Scenario, ServedRun, config_for, goodput_check, percentile_rows, request_errors,
    run_served, server_lateness, tolerance,
)

ATTEMPTS = 3
NOISY = 0.001  # seconds: the probe's p99 wake-up lateness past which 2 ms cannot be checked


def _table(rows: list[Any]) -> str:
    lines = [f"{'metric':6} {'pct':4} {'injected':>9} {'sent':>9} {'measured':>9} {'err ms':>8} {'err %':>7}"]
    for r in rows:
        mark = "" if r.ok and r.runner_ok else "  <- " + ("runner" if not r.runner_ok else "server late")
        lines.append(f"{r.metric:6} {r.pct:4} {r.injected * 1e3:9.3f} {r.sent * 1e3:9.3f} {r.measured * 1e3:9.3f} "
                     f"{r.error * 1e3:+8.3f} {r.error_pct:+6.2f}%{mark}")
    return "\n".join(lines)


def _check_shape(run: ServedRun) -> None:
    """What holds whatever the machine's load: every request sent once and answered in full."""
    s = run.scenario
    finished = run.state.finished()
    assert len(run.generations) == len(finished) == len(run.state.records) == s.requests, "no retry, no loss"
    for gen in run.generations:
        assert gen.error is None and gen.new_tokens == s.output_tokens and gen.batch_size == 1
        assert gen.itl_seconds is not None and len(gen.itl_seconds) == s.output_tokens - 1
    assert run.state.max_in_flight <= s.concurrency
    assert run.manifest["server"]["max_in_flight"] == s.concurrency, "the load reached its concurrency"


def _coarse(error: float, truth: float) -> bool:
    """The bound a busy machine still keeps: 25% or 10 ms (gross errors, such as the send time
    taken before httpx's own work or a full GC pause inside a stream, are far past it)."""
    return abs(error) <= max(0.25 * abs(truth), 0.010)


@dataclass
class _Attempt:
    rows: list[Any]
    clean: bool  # every row within 5% or 2 ms of injected and of sent, goodput exact
    noisy: bool  # the probe woke over NOISY late at p99, or the server missed its schedule by 2 ms at p99
    score: float  # the worst row's error in units of its tolerance
    line: str


def _attempt(scenario: Scenario, out: Path) -> tuple[_Attempt, ServedRun]:
    with scheduling_noise() as noise:
        run = run_served(scenario, out)
    _check_shape(run)
    rows = percentile_rows(run)
    truth, measured, margin = goodput_check(run)
    assert margin >= SLO_MARGIN, f"the SLO {scenario.slo.text()} does not split the injected requests cleanly"
    late = percentile(server_lateness(run.state), 99) or 0.0
    worst = max(rows, key=lambda r: abs(r.error) / tolerance(r.injected))
    line = (f"worst {worst.metric} {worst.pct} {worst.error * 1e3:+.3f} ms ({worst.error_pct:+.1f}%); server late p99 "
            f"{late * 1e3:.2f} ms; machine wake-up lateness p99 {noise.p99 * 1e3:.2f} ms; goodput {measured}/{truth}; "
            "per request vs sent (ms) " + ", ".join(f"{m} {v * 1e3:+.2f}" for m, v in request_errors(run).items()))
    clean = all(r.ok and r.runner_ok for r in rows) and measured == truth
    noisy = noise.p99 > NOISY or late > ABS_TOL
    return _Attempt(rows, clean, noisy, abs(worst.error) / tolerance(worst.injected), line), run


@pytest.mark.parametrize("name", ["c1", "c8", "c32"])
@pytest.mark.slow
def test_openai_speed_metrics_match_the_injected_timings(name: str, tmp_path: Path) -> None:
    scenario = SCENARIOS[name]
    tried: list[_Attempt] = []
    for attempt in range(ATTEMPTS):
        result, run = _attempt(scenario, tmp_path / f"attempt-{attempt}")
        tried.append(result)
        if result.clean:
            break
    lines = "\n".join(f"attempt {k + 1}: {a.line}" for k, a in enumerate(tried))
    best = min(tried, key=lambda a: a.score)
    report = f"{lines}\nbest attempt:\n{_table(best.rows)}"
    if not all(_coarse(r.error, r.injected) for r in best.rows):
        skip_if_loaded(f"{name}: off by more than 25% or 10 ms", report)
        pytest.fail(f"{name}: off by more than 25% or 10 ms\n{report}")
    if not best.clean:
        if any(a.noisy for a in tried) or loaded():
            pytest.skip(f"{name}: no attempt within 5% or 2 ms on a busy machine (a waiting thread woke over "
                        f"{NOISY * 1e3:g} ms late at p99, or the server's own sends missed their schedule by over "
                        f"{ABS_TOL * 1e3:g} ms, or {loaded() or 'the load average over the cores'}); "
                        f"within 25% or 10 ms\n{report}")
        pytest.fail(f"{name}: no attempt within 5% or 2 ms\n{report}")
    print(f"\n{name} ({scenario.requests} requests, {run.wall_seconds:.2f} s):\n{lines}\n{_table(best.rows)}")
    truth = goodput_check(run)[0]
    if scenario.timing.slow_share:
        assert truth < scenario.requests, "the slow tail misses the SLO"
    else:
        assert truth == scenario.requests


@pytest.mark.slow
def test_request_rate_arrivals_follow_the_poisson_schedule(tmp_path: Path) -> None:
    """Sent at the runner's Poisson times: the server sees arrivals whose mean gap is about 1/R,
    spread out (not all at once), each close to its scheduled time."""
    rate, n = 40.0, 40
    s = Scenario("poisson", 64, n, Timing(ttft_ms=5, gap_ms=1), SLO(ttft=1.0), output_tokens=4, request_rate=rate)
    run = run_served(s, tmp_path)
    assert len(run.state.records) == n and all(g.error is None for g in run.generations)
    arrived = sorted(r.arrived for r in run.state.records)
    gaps = [b - a for a, b in zip(arrived, arrived[1:])]
    mean_gap = (arrived[-1] - arrived[0]) / (n - 1)
    # the runner's own schedule (its `arrivals`, seeded by arrival_seed) against the server's clock
    schedule = run.runner.arrivals(n)
    off = [(a - arrived[0]) - t for a, t in zip(arrived, schedule)]
    if abs(mean_gap * rate - 1) > 0.25 or max(abs(x) for x in off) >= 0.010:
        skip_if_loaded("arrivals off their Poisson schedule", f"mean gap {mean_gap * 1e3:.1f} ms, 1/R = "
                       f"{1e3 / rate:.1f} ms, off schedule by up to {max(map(abs, off)) * 1e3:.1f} ms")
    assert abs(mean_gap * rate - 1) <= 0.25, f"mean gap {mean_gap * 1e3:.1f} ms, 1/R = {1e3 / rate:.1f} ms"
    assert sum(1 for g in gaps if g < 0.001) <= n // 10, "arrivals are spread out, not sent together"
    assert statistics.pstdev(gaps) > 0.5 * statistics.mean(gaps), "exponential gaps vary about as much as their mean"
    print(f"\nmean gap {mean_gap * 1e3:.2f} ms (1/R {1e3 / rate:.1f} ms, schedule "
          f"{(schedule[-1] - schedule[0]) / (n - 1) * 1e3:.2f} ms); off schedule by at most {max(map(abs, off)) * 1e3:.2f} ms")
    assert max(abs(x) for x in off) < 0.010, f"arrivals off their schedule by up to {max(off) * 1e3:.1f} ms"


# -- the hf runner: a model whose forward calls take a known time ------------------------------------------

PREFILL, DECODE, NEW_TOKENS = 0.060, 0.015, 8


def _hf_runner(model_dir: Path, batch: int, out: Path) -> tuple[Any, list[Any]]:
    cfg = parse_config({"name": f"paced-{batch}", "model": str(model_dir), "batch_size": batch,
                        "tasks": [{"pack": "latency", "count": 4,
                                   "shapes": [{"name": "s", "input_tokens": 64, "output_tokens": NEW_TOKENS}]}]})
    prepared = prepare(cfg, out)
    prepared.runner._ensure_loaded()  # type: ignore[attr-defined]
    return prepared.runner, prepared.items


def _run_paced(runner: Any, items: list[Any], pacer: ForwardPacer) -> list[Any]:
    gens: list[Any] = []
    pacer.attach(runner.model)
    try:
        runner.run(RunRequest(items), gens.append)
    finally:
        pacer.detach()
    return gens


def _hf_errors(gens: list[Any], ttft: float, gap: float, within: Any = None) -> list[str]:
    """Every figure of every request against its expected value: what is off by more than 5% or
    2 ms (or fails `within(error, truth)`)."""
    within = within or (lambda err, truth: abs(err) <= tolerance(truth))
    e2el = ttft + (NEW_TOKENS - 1) * gap
    bad = []
    for g in gens:
        got = {"ttft": g.prefill_seconds, "tpot": g.decode_seconds / (g.new_tokens - 1),
               "e2el": g.prefill_seconds + g.decode_seconds}
        want = {"ttft": ttft, "tpot": gap, "e2el": e2el}
        bad += [f"{g.item_id} {m} {got[m] * 1e3:.3f} ms, expected {want[m] * 1e3:.3f}" for m in want
                if not within(got[m] - want[m], want[m])]
        bad += [f"{g.item_id} itl[{k}] {x * 1e3:.3f} ms, expected {gap * 1e3:.3f}" for k, x in enumerate(g.itl_seconds)
                if not within(x - gap, gap)]
    return bad


@pytest.fixture
def one_torch_thread() -> Any:
    """The tiny model gains nothing from more; on a machine other jobs share, idle OpenMP workers
    waking late made single steps take 90 ms (real time, correctly measured, but not the
    forward times this test sets)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.slow
def test_hf_clock_matches_known_forward_times(batch: int, tiny_model_dir: Path, tmp_path: Path,
                                              one_torch_thread: None) -> None:
    """TTFT = the prompt's call (60 ms) + what generate does around it; every gap = a step's call
    (15 ms) + what generate does around it; E2EL = TTFT + 7 gaps. The 'around' is measured once
    unpadded, in the same process, and is a fraction of a millisecond on the tiny model."""
    runner, items = _hf_runner(tiny_model_dir, batch, tmp_path)
    _run_paced(runner, items, ForwardPacer())  # warm-up: first calls pay one-time costs
    tried, noisy = [], False
    for attempt in range(ATTEMPTS):
        overhead = calibrate(lambda pacer: _run_paced(runner, items, pacer))
        pacer = ForwardPacer(PREFILL, DECODE)
        with scheduling_noise() as noise:
            gens = _run_paced(runner, items, pacer)
        noisy = noisy or noise.p99 > NOISY
        assert len(gens) == 4 and all(g.new_tokens == NEW_TOKENS and g.batch_size == batch for g in gens)
        slowest = max(pacer.own("decode"), default=0.0)
        if slowest >= DECODE:  # the tiny model's step takes a fraction of a millisecond when it has a core
            skip_if_loaded(f"batch {batch}: a decoding step's own compute took {slowest * 1e3:.1f} ms, past the "
                           f"{DECODE * 1e3:g} ms it is padded to", f"wake-up lateness p99 {noise.p99 * 1e3:.2f} ms")
        assert pacer.own("prefill") and slowest < DECODE, "the model's compute fits in the padding"
        ttft, gap = PREFILL + overhead.first, DECODE + overhead.step
        bad = _hf_errors(gens, ttft, gap)
        gross = _hf_errors(gens, ttft, gap, _coarse)
        tried.append(f"attempt {attempt + 1}: overhead first {overhead.first * 1e3:.3f} ms, per step "
                     f"{overhead.step * 1e3:.3f} ms; machine wake-up lateness p99 {noise.p99 * 1e3:.2f} ms; "
                     f"{len(bad)} off" + "".join(f"\n  {b}" for b in bad[:8]))
        if not bad:
            break
    else:
        report = "\n".join(tried)
        if gross:
            skip_if_loaded(f"batch {batch}: off by more than 25% or 10 ms", report)
        assert not gross, f"batch {batch}: off by more than 25% or 10 ms\n{report}"
        if noisy or loaded():
            pytest.skip(f"batch {batch}: no attempt within 5% or 2 ms on a busy machine (a waiting thread woke over "
                        f"{NOISY * 1e3:g} ms late at p99, or {loaded() or 'the load average over the cores'}); "
                        f"within 25% or 10 ms\n{report}")
        pytest.fail(f"batch {batch}: the hf clock is off\n{report}")
    ttfts = [g.prefill_seconds * 1e3 for g in gens]
    gaps = [x * 1e3 for g in gens for x in g.itl_seconds]
    print(f"\nbatch {batch}: " + "\n".join(tried) + f"\n  TTFT {min(ttfts):.3f}-{max(ttfts):.3f} ms, "
          f"ITL {min(gaps):.3f}-{max(gaps):.3f} ms (median {statistics.median(gaps):.3f})")
