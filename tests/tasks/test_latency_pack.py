"""The `latency` pack and per-generation timing on the tiny model.

The model used here is the tiny random Llama with its generation config
biased hard towards end-of-sequence: without the pack's override it stops
after one token, so an exact output length proves the override works.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalrun.evals.compare import length_bucket

from evalrun.evals import api
from evalrun.evals.files import ConfigError
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.evals.speed import speed_table
from evalrun.tasks import get_pack
from tests.conftest import tiny_config

SHAPES = [{"name": "a", "input_tokens": 64, "output_tokens": 12}, {"name": "b", "input_tokens": 120, "output_tokens": 7}]


@pytest.fixture(scope="module")
def eos_model_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eos-llama")
    for f in tiny_model_dir.iterdir():
        shutil.copy(f, out / f.name)
    path = out / "generation_config.json"
    cfg = json.loads(path.read_text())
    eos = cfg["eos_token_id"]
    cfg["sequence_bias"] = [[[eos if isinstance(eos, int) else eos[0]], 100.0]]
    path.write_text(json.dumps(cfg))
    return out


def _latency_config(model_dir: Path, **over):  # type: ignore[no-untyped-def]
    return tiny_config(model_dir, batch_size=2, tasks=[{"pack": "latency", "shapes": SHAPES, "count": 3}], **over)


def _run(model_dir: Path, out: Path, data: dict):  # type: ignore[no-untyped-def]
    return execute(prepare(parse_config(data, file=out / "cfg.yaml"), out), log=lambda _m: None)


def test_items_are_fixed_shape_speed_only_and_deterministic() -> None:
    spec = get_pack("latency")
    params = spec.params.model_validate({"shapes": ["short", "long", SHAPES[0]], "count": 2})
    count = lambda text: len(text.split())  # noqa: E731  (a stand-in tokenizer)
    items = spec.build(params, count)
    assert [it.id for it in items] == ["latency/short-0", "latency/short-1", "latency/long-0", "latency/long-1",
                                       "latency/a-0", "latency/a-1"]
    assert all(it.fields == [] and it.generation and it.generation.ignore_eos for it in items)
    assert [it.generation.max_new_tokens for it in items] == [300, 300, 1000, 1000, 12, 12]  # type: ignore[union-attr]
    for it, target in zip(items, [200, 200, 2000, 2000, 64, 64]):
        assert target * 0.9 <= it.meta["context_tokens"] <= target
    assert items[0].prompt != items[1].prompt  # no shared prefix beyond the instruction
    assert [it.model_dump() for it in spec.build(params, count)] == [it.model_dump() for it in items]
    with pytest.raises(ValueError):
        spec.params.model_validate({"shapes": ["short", {"name": "short", "input_tokens": 64, "output_tokens": 4}]})


def test_unknown_shape_is_a_config_error(tiny_model_dir: Path, tmp_path: Path) -> None:
    data = tiny_config(tiny_model_dir, tasks=[{"pack": "latency", "shapes": ["huge"]}])
    with pytest.raises(ConfigError, match="shapes"):
        parse_config(data, file=tmp_path / "cfg.yaml")


@pytest.mark.slow
def test_exact_output_lengths_timings_and_manifest(eos_model_dir: Path, tmp_path: Path) -> None:
    # the EOS-loving model stops after one token on an ordinary item...
    plain = _run(eos_model_dir, tmp_path / "plain", tiny_config(eos_model_dir, tasks=[
        {"pack": "needle_numbers", "lengths": [96], "depths": [0.0], "values": ["integer"]}]))
    assert [g.new_tokens for g in plain.generations.values()] == [1]
    # ...and generates exactly each shape's length on the latency pack
    prepared = prepare(parse_config(_latency_config(eos_model_dir), file=tmp_path / "cfg.yaml"), tmp_path / "lat")
    batches = prepared.runner.batches(prepared.items)
    assert all(len({it.generation for it in b}) == 1 for b in batches), "a batch never mixes output lengths"
    assert sorted(len(b) for b in batches) == [1, 1, 2, 2]
    result = execute(prepared, log=lambda _m: None)
    gens = result.generations
    for it in result.items:
        g = gens[it.id]
        assert g.error is None and g.new_tokens == it.generation.max_new_tokens  # type: ignore[union-attr]
        assert len(g.output_ids or []) == g.new_tokens
        # timing fields present and consistent with each other
        assert g.prefill_seconds is not None and g.decode_seconds is not None
        assert 0 < g.prefill_seconds and 0 < g.decode_seconds and g.prefill_seconds + g.decode_seconds <= g.seconds + 2e-6  # stored to 6 decimals, each rounded
        assert g.decode_tokens_per_second == pytest.approx((g.new_tokens - 1) / g.decode_seconds, rel=1e-3)
        assert g.batch_shared == (g.batch_size > 1)
    sp = result.manifest["speed"]
    assert sp["items"] == sp["items_timed"] == 6 and sp["new_tokens"] == 3 * 12 + 3 * 7
    assert sp["ttft"]["p50"] > 0 and sp["ttft"]["p99"] >= sp["ttft"]["p95"] >= sp["ttft"]["p50"]
    assert sp["definitions"].startswith("vLLM") and "perf_counter" in sp["clock"]
    assert sorted(s["shape"] for s in sp["shapes"]) == ["a", "b"] and [p["pack"] for p in sp["packs"]] == ["latency"]
    # one ITL gap per decoding step after the first token: new_tokens - 1 of them per request
    assert sp["itl"]["n"] == sum(g.new_tokens - 1 for g in gens.values())
    assert all(len(g.itl_seconds or []) == g.new_tokens - 1 and g.started_at for g in gens.values())
    assert [b["bucket"] for b in sp["buckets"]] == sorted({length_bucket(g.prompt_tokens) for g in gens.values()})
    # the tiny model: 2 layers x 2 KV heads x 16 dims x 2 (K and V) x 4 bytes (float32)
    assert sp["kv_cache"]["bytes_per_token"] == 2 * 2 * 2 * 16 * 4
    assert sp["kv_cache"]["longest_context_tokens"] == max(g.prompt_tokens + g.new_tokens for g in gens.values())
    assert sp["peak_memory"]["bytes"] > 0 and sp["peak_memory"]["kind"] == "process_peak_rss"
    assert sp["load_seconds"] == result.manifest["load_seconds"]


@pytest.mark.slow
def test_speed_only_compare_reports_speed_and_passes(eos_model_dir: Path, tmp_path: Path) -> None:
    data = _latency_config(eos_model_dir)
    base = parse_config(data, file=tmp_path / "b.yaml")
    cand = parse_config({**data, "name": "int4",
                         "acceleration": {"kv_cache": {"quant": "int4", "backend": "quanto", "group_size": 16,
                                                       "residual_length": 4}}}, file=tmp_path / "c.yaml")
    report = api.compare(base, [cand], out=tmp_path / "runs", log=lambda _m: None)
    assert report.passed
    [pc] = report.comparisons[0].packs
    assert pc.speed_only and pc.n == 6
    assert all(g.new_tokens == it.generation.max_new_tokens  # type: ignore[union-attr]
               for it in report.candidates[0].run.items for g in [report.candidates[0].run.generations[it.id]])
    base_row, cand_row = speed_table(report).rows
    assert base_row.speed_only and cand_row.speed_only and cand_row.accuracy_delta_points is None
    assert {"ttft_p50", "tpot_p50", "e2el_p50"} <= set(cand_row.speedups)
    shapes = [g for g in cand_row.groups if g.kind == "shape"]
    assert sorted(g.name for g in shapes) == ["a", "b"] and all(g.metrics["tpot"]["p99"] for g in shapes)
    assert cand_row.kv_bytes_per_token is not None and cand_row.kv_bytes_per_token < base_row.kv_bytes_per_token
