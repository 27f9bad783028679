"""Load sweeps: the best setting under an SLO from real Generation lists, knob validation
before anything runs, and `evalrun sweep --load` run for real on the tiny model (each point
its own store directory) and against a real OpenAI-compatible server (concurrency)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from evalrun.contract.types import Generation
from evalrun.evals.files import ConfigError
from evalrun.evals.config import (
    check_knob, config_slo, parse_config, parse_load, parse_workload, point_config, with_workload,
)
from evalrun.evals.run import LoadCurve, LoadPoint, LoadSweep, best_index, load_sweep, make_curve, point_metrics
from evalrun.evals.timing import parse_slo
from evalrun.reports.sweep import load_sweep_markdown, load_table
from tests.conftest import run_cli
from tests.fakes.runs import generation

TASKS = [{"pack": "needle_numbers", "lengths": [128], "depths": [0.0], "values": ["integer"]}]


def _batch(n: int, start: float, prefill: float, tpot: float, tokens: int = 10) -> list[Generation]:
    """One hf batch of n requests started together: every request has the batch's timings."""
    decode = tpot * (tokens - 1)
    return [generation(f"b{start}-{i}", pack="latency", new_tokens=tokens, prompt_tokens=200, seconds=prefill + decode,
                       batch_size=n, prefill_seconds=prefill, decode_seconds=decode, started_at=start,
                       itl_seconds=[tpot] * (tokens - 1)) for i in range(n)]


def _sequential(batches: int, n: int, prefill: float, tpot: float) -> list[Generation]:
    gens: list[Generation] = []
    t = 1000.0
    for _ in range(batches):
        gens += _batch(n, t, prefill, tpot)
        t += prefill + tpot * 9
    return gens


def _config(runner: str = "hf", name: str = "c"):  # type: ignore[no-untyped-def]
    data = {"name": name, "tasks": TASKS}
    if runner == "openai":
        data |= {"runner": "openai", "openai": {"base_url": "http://127.0.0.1:8000/v1"}}
    return parse_config(data, file=Path(f"/configs/{name}.yaml"))


# batch 1: 8 requests one at a time (3.6 req/s); batch 4: two batches, TPOT 40 ms (7.1 req/s);
# batch 8: one batch, TPOT 60 ms (9.5 req/s, the highest, but over a 50 ms TPOT SLO)
POINTS = {1: _sequential(8, 1, 0.1, 0.02), 4: _sequential(2, 4, 0.2, 0.04), 8: _sequential(1, 8, 0.3, 0.06)}


def _points(slo):  # type: ignore[no-untyped-def]
    return [point_metrics(v, gens, slo) for v, gens in POINTS.items()]


def test_best_is_the_most_good_requests_per_second_and_never_a_point_with_none_good() -> None:
    slo = parse_slo("tpot=50ms")
    points = _points(slo)
    assert [p.request_throughput for p in points] == pytest.approx([8 / 2.24, 8 / 1.12, 8 / 0.84])
    assert [p.goodput.good for p in points] == [8, 8, 0]
    assert best_index(points, slo_given=True) == 1  # batch 8 has the most req/s, but no request meets the SLO
    curve = make_curve(_config(), "batch_size", points, slo)
    assert curve.best == 1
    assert curve.summary == "best batch_size 4: 7.14 req/s, 7.14 good req/s under tpot<=50ms (8 of 8 requests good)"
    assert curve.points[1].tpot.p99 == pytest.approx(0.04) and curve.points[2].ttft.p50 == pytest.approx(0.3)


def test_without_an_slo_the_best_is_the_highest_request_throughput() -> None:
    points = _points(None)
    assert all(p.goodput is None for p in points)
    curve = make_curve(_config(), "batch_size", points, None)
    assert curve.best == 2 and curve.summary.startswith("best batch_size 8: 9.52 req/s, 95.2 output tok/s")


def test_no_setting_meets_the_slo() -> None:
    slo = parse_slo("ttft=50ms")
    curve = make_curve(_config(), "batch_size", _points(slo), slo)
    assert curve.best is None and curve.summary == "no setting meets the SLO (ttft<=50ms)"
    assert "no setting meets the SLO" in load_sweep_markdown(LoadSweep(knob="batch_size", values=[1, 4, 8],
                                                                       curves=[curve]))


def test_a_tie_goes_to_the_lower_load_and_failed_requests_count_as_not_good() -> None:
    same = [point_metrics(v, _sequential(2, 2, 0.1, 0.02), None) for v in (2, 4)]
    assert best_index(same, slo_given=False) == 0
    gens = _sequential(1, 4, 0.1, 0.02)
    gens[0] = gens[0].model_copy(update={"error": "boom", "output": None})
    p = point_metrics(4, gens, parse_slo("tpot=50ms"))
    assert (p.requests, p.completed, p.failed, p.goodput.good, p.goodput.share) == (4, 3, 1, 3, 0.75)


def test_a_batch_the_runner_capped_is_said_per_point() -> None:
    capped = point_metrics(4, _sequential(4, 1, 0.1, 0.02), knob="batch_size", runner_batch=1)
    assert capped.effective == 1 and "ran at batch_size 1 (the runner capped it" in capped.note
    few = point_metrics(8, _sequential(1, 4, 0.1, 0.02), knob="batch_size", runner_batch=8)
    assert few.effective == 4 and "fewer requests per shape than the batch" in few.note
    assert point_metrics(4, _sequential(1, 4, 0.1, 0.02), knob="batch_size").note is None


def test_knobs_are_checked_against_the_runner_naming_file_and_key() -> None:
    with pytest.raises(ConfigError) as hf:
        check_knob(_config("hf"), "concurrency")
    assert hf.value.file == "/configs/c.yaml" and hf.value.path == "openai.concurrency"
    with pytest.raises(ConfigError) as oa:
        check_knob(_config("openai"), "batch_size")
    assert oa.value.path == "batch_size" and "sweep concurrency or request_rate" in str(oa.value)
    served = point_config(_config("openai"), "request_rate", 2.5)
    assert served.openai.request_rate == 2.5 and served.name == "c-request_rate-2.5"
    assert point_config(_config("hf"), "batch_size", 8).batch_size == 8
    with pytest.raises(ConfigError) as bad:
        point_config(_config("openai"), "concurrency", 0)
    assert bad.value.path == "openai.concurrency"
    with pytest.raises(ConfigError, match="batch_size"):
        point_config(_config("hf"), "batch_size", 2000)
    assert config_slo(_config()) == getattr(_config(), "slo", None)  # --slo only, until configs have `slo:`


def test_load_and_workload_options_parse_or_name_the_problem() -> None:
    assert parse_load("batch_size=8,1,4") == ("batch_size", [1, 4, 8])
    assert parse_load("request_rate=0.5,2") == ("request_rate", [0.5, 2.0])
    for option, message in (("batch_size", "expected KNOB"), ("batches=1,2", "unknown knob"),
                            ("batch_size=1,two", "not an integer"), ("concurrency=2,2", "given twice")):
        with pytest.raises(ConfigError, match=message):
            parse_load(option)
    workload = parse_workload("short,chat:64:4", count=3)
    cfg = with_workload(_config(), workload)
    assert [t.pack for t in cfg.tasks] == ["latency"] and cfg.tasks[0].params.count == 3
    assert workload.text() == "latency pack: short, chat:64:4 x 3" and with_workload(cfg, None) is cfg
    with pytest.raises(ConfigError, match="neither a preset"):
        parse_workload("short,huge")
    with pytest.raises(ConfigError, match="unique"):
        parse_workload("short,short")


def test_untrusted_names_are_escaped_in_every_table() -> None:
    from rich.console import Console

    hostile = "<script>x</script>|[bold red]boom[/]"
    curve = LoadCurve(config=hostile, knob="batch_size", points=_points(None))
    md = load_sweep_markdown(LoadSweep(knob="batch_size", values=[1, 4, 8], curves=[curve]))
    assert "<script>" not in md and "&lt;script&gt;" in md and "|[bold" not in md
    console = Console(record=True, width=200)
    console.print(load_table(curve))
    assert "[bold red]boom[/]" in console.export_text()
    from evalrun.reports.sweep import load_sweep_html

    page = load_sweep_html(LoadSweep(knob="batch_size", values=[1, 4, 8], curves=[curve]))
    assert "<script>x" not in page and "&lt;script&gt;x" in page


# --------------------------------------------------------------------------- real runs


@pytest.mark.slow
def test_cli_sweeps_batch_sizes_each_point_in_its_own_directory(tmp_path: Path, tiny_model_dir: Path) -> None:
    paths = []
    for name in ("tiny", "tiny-b"):
        paths.append(tmp_path / f"{name}.yaml")
        paths[-1].write_text(yaml.safe_dump({"name": name, "model": str(tiny_model_dir), "tasks": TASKS}))
    out, report = tmp_path / "runs", tmp_path / "sweep.json"
    res = run_cli("sweep", *map(str, paths), "--load", "batch_size=4,1,2", "--workload", "tiny:40:4",
                  "--count", "4", "--slo", "e2el=60s", "--out", str(out), "--json", str(report),
                  "--markdown", str(tmp_path / "sweep.md"), "--html", str(tmp_path / "sweep.html"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "load sweep of tiny" in res.stdout and "best batch_size" in res.stdout
    assert "load point 6/6" in res.stderr
    data = json.loads(report.read_text())
    assert data["schema_version"] == 1 and data["values"] == [1, 2, 4] and len(data["curves"]) == 2
    dirs = set()
    for curve in data["curves"]:
        points = curve["points"]
        assert [p["value"] for p in points] == [1, 2, 4] and curve["best"] in range(3)
        assert all(p["request_throughput"] > 0 and p["output_throughput"] > 0 for p in points)
        assert all(p["requests"] == 4 and p["goodput"]["good"] == 4 for p in points)
        assert [p["effective"] for p in points] == [1, 2, 4]
        for p in points:
            run_dir = Path(p["run_dir"])
            assert run_dir.parent == out / "load" / f"batch_size-{p['value']}" and (run_dir / "samples.jsonl").exists()
            dirs.add(run_dir)
    assert len(dirs) == 6
    assert "### tiny-b" in (tmp_path / "sweep.md").read_text()
    # the curves: one chart per latency, a curve per config with a point per batch size, the best ringed
    page = (tmp_path / "sweep.html").read_text()
    assert page.count("<svg") == 3 and "<script" not in page and "TPOT p99 against output tokens/s" in page
    assert page.count('class="ch-best') >= 2 and "batch_size 4" in page and "tiny-b" in page


@pytest.mark.slow
def test_cli_knob_of_the_other_runner_and_set_with_load_are_exit_2(tmp_path: Path, tiny_model_dir: Path) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump({"name": "tiny", "model": str(tiny_model_dir), "tasks": TASKS}))
    out = tmp_path / "runs"
    res = run_cli("sweep", str(cfg), "--load", "concurrency=1,2", "--out", str(out))
    assert res.returncode == 2 and "openai.concurrency" in res.stderr and "tiny.yaml" in res.stderr, res.stderr
    both = run_cli("sweep", str(cfg), "--load", "batch_size=1,2", "--set", "generation.max_new_tokens=4,8",
                   "--out", str(out))
    assert both.returncode == 2 and "exactly one of --set" in both.stderr, both.stderr
    assert not out.exists()  # nothing ran


@pytest.mark.slow
def test_openai_points_get_their_own_directories_and_are_timed_afresh(tmp_path: Path, tiny_model_dir: Path) -> None:
    """The run key ignores concurrency: without a directory per point, concurrency 2 would reuse
    concurrency 1's samples. A second sweep moves the earlier run aside instead of reusing it."""
    from tests.fakes.openai_server import HFBackend, OpenAITestServer

    with OpenAITestServer(HFBackend(str(tiny_model_dir))) as srv:
        cfg = parse_config({"name": "served", "model": "smollm2-135m", "runner": "openai",
                            "openai": {"base_url": srv.base_url, "tokenizer": str(tiny_model_dir)}, "tasks": TASKS},
                           file=tmp_path / "served.yaml")
        workload = parse_workload("tiny:40:3", 3)
        out = tmp_path / "runs"
        first = load_sweep([cfg], "concurrency", [1, 2], parse_slo("e2el=60s"), out=out, log=lambda m: None,
                           workload=workload)
        again = load_sweep([cfg], "concurrency", [2], None, out=out, log=lambda m: None, workload=workload)
    a, b = (Path(p.run_dir) for p in first.curves[0].points)
    assert a.parent.name == "concurrency-1" and b.parent.name == "concurrency-2"
    assert a.name.rsplit("-", 1)[1] == b.name.rsplit("-", 1)[1]  # one run key, two directories
    assert all(p.requests == 3 and p.request_throughput > 0 for p in first.curves[0].points)
    assert Path(again.curves[0].points[0].run_dir) == b and (b / "samples.jsonl").exists()
    assert [p.name for p in b.parent.iterdir() if ".replaced-" in p.name]  # the earlier run, kept


def test_points_the_runner_capped_to_an_earlier_load_are_not_best_of_their_own() -> None:
    """Prompt lookup runs at batch 1 whatever is asked: its batch-8 point is batch 1 again, and
    noise between repeats of one setting must not make "batch 8" its best."""
    points = [LoadPoint(value=v, effective=1, requests=8, completed=8, request_throughput=rate)
              for v, rate in ((1, 0.50), (2, 0.52), (4, 0.49), (8, 0.53))]
    assert best_index(points, slo_given=False) == 0
    grown = [LoadPoint(value=1, effective=1, requests=8, completed=8, request_throughput=0.5),
             LoadPoint(value=2, effective=2, requests=8, completed=8, request_throughput=0.9)]
    assert best_index(grown, slo_given=False) == 1
