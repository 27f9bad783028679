"""Speed figures on known data: per-generation rates, p50/p95, batch-shared
throughput, context buckets, KV bytes, the ratio-of-medians interval, the
capacity arithmetic, and the speed-accuracy table's claims (emulated, other
device, older runs without timings, speed-only packs)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from evalrun.evals import api
from evalrun.evals.speed import EMULATED_NOTE, NOT_COMPARABLE_NOTE, _speed as speed, capacity, speed_table
from evalrun.evals.compare import length_bucket
from evalrun.evals.results import RunResult
from evalrun.evals.stats import bootstrap_ratio_of_quantiles
from evalrun.contract.types import Field, Generation, Item
from tests.fakes.runs import answered, generation, run_result


def gen(i: int, new_tokens: int = 11, seconds: float = 1.0, prefill: float | None = 0.2,
        decode: float | None = 0.5, batch: int = 1, prompt_tokens: int = 100, error: str | None = None) -> Generation:
    return generation(f"i{i}", new_tokens=new_tokens, seconds=seconds, batch_size=batch, prompt_tokens=prompt_tokens,
                      prefill_seconds=prefill, decode_seconds=decode, error=error)


# --------------------------------------------------------------------------- one generation


def test_generation_rates_are_consistent_and_recomputed_on_read() -> None:
    g = gen(0, new_tokens=11, decode=0.5, batch=4)
    decode_tokens = g.new_tokens - 1  # the first token belongs to prefill
    assert g.decode_tokens_per_second == pytest.approx(decode_tokens / g.decode_seconds) == 20.0
    assert g.decode_seconds_per_token == pytest.approx(g.decode_seconds / decode_tokens) == 0.05
    assert g.batch_shared is True and gen(1, batch=1).batch_shared is False
    line = g.model_dump_json()
    assert '"decode_tokens_per_second":20.0' in line and '"batch_shared":true' in line
    # stored derived values are never trusted: a tampered line reads back recomputed
    tampered = line.replace('"decode_tokens_per_second":20.0', '"decode_tokens_per_second":999.0')
    assert Generation.model_validate_json(tampered).decode_tokens_per_second == 20.0
    assert Generation.model_validate_json(line) == g


def test_missing_or_degenerate_timings_give_none_not_zero() -> None:
    older = Generation(item_id="a", pack="p", prompt_hash="h", new_tokens=5, seconds=1.0)  # before timings existed
    assert older.decode_tokens_per_second is None and older.decode_seconds_per_token is None
    assert gen(0, new_tokens=1).decode_tokens_per_second is None  # only the prefill's token
    assert gen(0, decode=0.0).decode_tokens_per_second is None


# --------------------------------------------------------------------------- a run


def test_p50_p95_on_known_data() -> None:
    # TTFT 0.01 .. 1.00 s: linear interpolation gives p50 0.505, p95 0.9505
    gens = [gen(i, prefill=(i + 1) / 100) for i in range(100)]
    d = speed.timing_figures(gens)["ttft"]
    assert d["n"] == 100 and d["p50"] == pytest.approx(0.505) and d["p95"] == pytest.approx(0.9505)
    assert d["p90"] == pytest.approx(0.901) and d["p99"] == pytest.approx(0.9901) and d["mean"] == pytest.approx(0.505)
    # per-token latency of 0.1 .. 0.4 s (decode of 10 tokens over 1..4 s): p50 is the middle pair's mean
    gens = [gen(i, new_tokens=11, decode=float(s)) for i, s in enumerate([4, 1, 3, 2])]
    d = speed.timing_figures(gens)
    assert d["tpot"]["p50"] == pytest.approx(0.25)
    # p95 sits at rank 0.95 x 3 = 2.85 of the sorted 0.1, 0.2, 0.3, 0.4: 0.3 + 0.85 x 0.1
    assert d["tpot"]["p95"] == pytest.approx(0.385)
    # E2EL is TTFT + decode: 0.2 + 1..4 s
    assert d["e2el"]["p50"] == pytest.approx(2.7)


def test_errors_and_untimed_generations_are_left_out() -> None:
    gens = [gen(0, prefill=0.4), gen(1, prefill=None, decode=None), gen(2, error="boom", prefill=None)]
    d = speed.timing_figures(gens)
    assert d["items"] == 2 and d["items_timed"] == 1
    assert d["ttft"] == {"mean": 0.4, "p50": 0.4, "p90": 0.4, "p95": 0.4, "p99": 0.4, "n": 1}
    assert d["failed"] == 1 and d["completed"] == 2
    assert speed.timing_figures([])["ttft"] == {"mean": None, "p50": None, "p90": None, "p95": None, "p99": None,
                                                "n": 0}


def test_batch_time_is_counted_once_per_batch() -> None:
    # two batches of 4 items (2 s and 1 s wall, 0.4 s / 0.2 s prefill), 11 new tokens per item
    gens = [gen(i, seconds=2.0, prefill=0.4, decode=1.5, batch=4) for i in range(4)]
    gens += [gen(4 + i, seconds=1.0, prefill=0.2, decode=0.7, batch=4) for i in range(4)]
    d = speed.timing_figures(gens)
    assert d["generation_seconds"] == pytest.approx(3.0)
    # no start times stored: the duration sums each batch once, and says so
    assert d["duration_seconds"] == pytest.approx(3.0) and "summed" in d["throughput_basis"]
    assert d["request_throughput"] == pytest.approx(8 / 3.0)
    assert d["output_throughput"] == pytest.approx(88 / 3.0)
    # aggregate decode: 80 decode tokens over (2 - 0.4) + (1 - 0.2) s of batch decode wall time
    assert d["decode_throughput_tokens_per_second"] == pytest.approx(80 / 2.4)
    assert d["batch_size_max"] == 4 and d["mean_new_tokens"] == 11


def test_context_buckets() -> None:
    assert [length_bucket(n) for n in (1, 256, 257, 512, 513, 2048, 2049, 8192, 8193)] == [
        "<=256", "<=256", "<=512", "<=512", "<=1k", "<=2k", "<=4k", "<=8k", "<=16k"]
    gens = [gen(0, prompt_tokens=9000), gen(1, prompt_tokens=100, prefill=0.1), gen(2, prompt_tokens=300, prefill=0.3)]
    buckets = speed.by_group(gens)["buckets"]
    assert [b["bucket"] for b in buckets] == ["<=256", "<=512", "<=16k"]
    assert buckets[0]["items"] == 1 and buckets[0]["ttft"]["p50"] == pytest.approx(0.1)
    assert speed.run_speed(gens)["bucket_edges_prompt_tokens"] == [256, 512, 16384]


def test_kv_bytes_from_config_and_from_a_measured_ratio() -> None:
    # the default model's shape: 30 layers, 3 KV heads of 64 dims, float32
    cfg = SimpleNamespace(num_hidden_layers=30, num_key_value_heads=3, num_attention_heads=9, hidden_size=576)
    kv = speed.kv_cache_figures(cfg, 4, {}, 1000)
    assert kv is not None and kv["bytes_per_token"] == 2 * 30 * 3 * 64 * 4 == 46080
    assert kv["bytes_at_longest_context"] == 46080 * 1000
    quant = speed.kv_cache_figures(cfg, 4, {"kv_cache": {"kv_bytes_ratio": 0.25}}, 1000)
    assert quant is not None and quant["bytes_per_token"] == pytest.approx(11520) and "measured" in quant["source"]
    assert speed.kv_cache_figures(None, 4, {}, 10) is None  # a runner without a model config (remote server)


# --------------------------------------------------------------------------- speedup interval


def test_ratio_of_medians_and_its_interval() -> None:
    base = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    iv = bootstrap_ratio_of_quantiles(base, base / 2, 50.0)
    assert iv is not None and (iv.delta, iv.low, iv.high) == pytest.approx((2.0, 2.0, 2.0))
    rng = np.random.default_rng(1)
    b = rng.lognormal(0, 0.3, 200)
    c = b / 1.5 * rng.lognormal(0, 0.1, 200)
    iv = bootstrap_ratio_of_quantiles(b, c, 50.0)
    assert iv is not None and iv.low < iv.delta < iv.high and iv.low < 1.5 < iv.high and iv.low > 1.3
    assert bootstrap_ratio_of_quantiles([1.0], [1.0], 50.0) is None


# --------------------------------------------------------------------------- capacity


def test_capacity_on_known_numbers() -> None:
    # 4 requests/s measured per device; 1,000,000 requests/day x 3 at peak = 34.72 requests/s -> 8.68 devices -> 9
    est = capacity.estimate(4.0, capacity.CapacityInputs(requests_per_day=1_000_000, peak_factor=3))
    assert est.peak_requests_per_second == pytest.approx(1_000_000 * 3 / 86_400)
    assert est.devices == 9
    # exactly on a boundary: 8 requests/s at peak on 4 per device is 2 devices, not 3
    assert capacity.devices_needed(8 * 86_400, 1.0, 4.0) == 2
    assert capacity.devices_needed(0, 2.0, 4.0) == 0
    assert capacity.estimate(4.0, capacity.CapacityInputs()).devices is None
    with pytest.raises(ValueError):
        capacity.CapacityInputs(peak_factor=0.5)
    with pytest.raises(ValueError):
        capacity.estimate(0, capacity.CapacityInputs())


# --------------------------------------------------------------------------- the table's claims


def _run(name: str, scale: float, *, fields: bool = True, device: str = "cpu", emulated: list[str] | None = None,
         timed: bool = True, correct: int = 6) -> RunResult:
    items, gens = [], {}
    for i in range(6):
        flds = [Field(name="v", kind="number", gold=str(1000 + i))] if fields else []
        it = Item(id=f"p/{i}", pack="p", prompt=f"question {i}", fields=flds)
        items.append(it)
        gens[it.id] = answered(it, str(1000 + i) if i < correct else "0", new_tokens=21, seconds=scale,
                               prefill_seconds=0.3 * scale if timed else None,
                               decode_seconds=0.6 * scale * (1 + 0.1 * i) if timed else None, prompt_tokens=40)
    return run_result(name, items, gens, device=device, dtype="float32", emulated=emulated or [],
                      config={"acceleration": {"kv_cache": {"quant": "int4"}} if name != "base" else {}},
                      effects={"kv_cache": {"kv_bytes_ratio": 0.25}} if name != "base" else {})  # its proof


def test_table_claims_speed_only_where_honest() -> None:
    base = _run("base", 1.0)
    report = api.compare_results(base, [(_run("fast", 0.5, correct=5), None),
                                        (_run("emul", 0.5, emulated=["activation_sparsity"]), None),
                                        (_run("gpu", 0.1, device="cuda"), None),
                                        (_run("old", 0.5, timed=False), None)])
    rows = {r.run: r for r in speed_table(report, capacity.CapacityInputs(requests_per_day=86_400)).rows}
    fast = rows["fast"]
    assert fast.speedups["ttft_p50"].value == pytest.approx(2.0)
    assert fast.speedups["tpot_p50"].value == pytest.approx(2.0)
    assert fast.speedups["e2el_p50"].value == pytest.approx(2.0)
    assert fast.accuracy_delta_points == pytest.approx(-100 / 6)
    # capacity from the E2E request throughput: 6 requests over 6 x 0.5 s summed
    assert fast.request_throughput == pytest.approx(2.0)
    assert fast.devices_needed == 1 and fast.requests_per_second_per_device == pytest.approx(2.0)
    assert EMULATED_NOTE in (rows["emul"].speed_note or "") and not rows["emul"].speedups
    assert rows["gpu"].speed_note == NOT_COMPARABLE_NOTE and not rows["gpu"].speedups
    assert rows["gpu"].devices_needed is None
    # a run stored before timings existed: end-to-end figures only, no crash, no invented zeros
    old = rows["old"]
    assert old.metrics["ttft"]["p50"] is None and "ttft_p50" not in old.speedups and "tpot_p50" not in old.speedups
    assert old.items_timed == 6 and old.speed_note is None
    assert old.metrics["e2el"]["n"] == 6  # batch 1: the whole call is its E2EL


def test_speed_only_packs_make_no_accuracy_claim_and_gate_on_errors() -> None:
    base = _run("base", 1.0, fields=False)
    cand = _run("fast", 0.5, fields=False)
    cand.generations["p/0"] = cand.generations["p/0"].model_copy(update={"error": "RuntimeError: boom",
                                                                          "output": None})
    report = api.compare_results(base, [(cand, None)])
    [pc] = report.comparisons[0].packs
    assert pc.speed_only and pc.stats is None and pc.n == 6
    verdict = report.verdicts[0]
    assert [r.rule for r in verdict.rules] == ["errors"] and not verdict.passed
    assert any("speed only" in n for n in verdict.notes)
    table = speed_table(report)
    assert table.rows[0].speed_only and table.rows[1].speed_only
    assert table.rows[1].accuracy_delta_points is None and table.rows[1].speedups["ttft_p50"].value == pytest.approx(2.0)
    ok = api.compare_results(base, [(_run("fast", 0.5, fields=False), None)])
    assert ok.passed


def test_a_stored_baseline_against_a_fresh_candidate_is_flagged() -> None:
    base = _run("base", 1.0)
    base.manifest = base.manifest.with_session({"finished": "2026-11-01T09:00:00+00:00"})
    fresh = _run("fast", 0.5)
    fresh.reused = False
    note = speed_table(api.compare_results(base, [(fresh, None)])).spread_note
    assert "2026-11-01T09:00:00+00:00" in note and "fast ran now" in note and "interleaved" in note
    both_stored = speed_table(api.compare_results(base, [(_run("fast", 0.5), None)])).spread_note
    assert "timings are stored from" not in both_stored and "ran now" not in both_stored


def test_a_candidate_at_another_batch_size_is_flagged_as_latency() -> None:
    base = _run("base", 1.0)
    one = _run("pld", 0.5)
    for g in base.generations.values():
        g.batch_size = 4
    note = speed_table(api.compare_results(base, [(one, None)])).spread_note
    assert "pld (batch 1)" in note and "baseline (4)" in note and "req/s per device" in note


def test_speedup_interval_does_not_depend_on_the_order_runs_were_read() -> None:
    """A run generated now lists its items in set order (seeded per process), a reused one in file
    order: the same timings must give the same interval either way."""
    from dataclasses import replace

    from evalrun.evals import api
    from evalrun.evals.speed import speed_table
    from tests.conftest import doc_items, make_run, needle_items

    items = needle_items() + doc_items()
    base, cand = make_run("baseline", items, set()), make_run("int4kv", items, set(), seconds=0.4)
    cand = replace(cand, generations={k: cand.generations[k] for k in reversed(list(cand.generations))})
    for k, g in enumerate(list(cand.generations.values())):  # timings that differ item by item
        cand.generations[g.item_id] = g.model_copy(update={"prefill_seconds": g.prefill_seconds * (1 + k * 37 % 11)})
    forward = speed_table(api.compare_results(base, [(cand, None)])).rows[1]
    shuffled = replace(base, generations={k: base.generations[k] for k in sorted(base.generations, key=hash)})
    backward = speed_table(api.compare_results(shuffled, [(cand, None)])).rows[1]
    assert forward.speedups["ttft_p50"] == backward.speedups["ttft_p50"]


def test_median_of_paired_ratios_cancels_a_load_both_sides_of_a_pair_saw() -> None:
    """Half the pairs timed under a load that triples both sides: every pair's ratio is still 1.25,
    while a ratio of medians falls between the loaded and the unloaded requests."""
    from evalrun.evals.stats import bootstrap_median_of_ratios, bootstrap_ratio_of_quantiles

    rng = np.random.default_rng(3)
    load = np.where(np.arange(20) < 10, 1.0, 3.0)
    base = rng.uniform(0.9, 1.1, 20) * load
    cand = base / 1.25
    iv = bootstrap_median_of_ratios(base, cand)
    assert iv is not None and (iv.delta, iv.low, iv.high) == pytest.approx((1.25, 1.25, 1.25))
    # unpaired medians of a bimodal run: the interval spans the gap between the two loads
    wide = bootstrap_ratio_of_quantiles(base, np.roll(cand, 1), 50)
    assert wide is not None and wide.high - wide.low > 0.5
    assert bootstrap_median_of_ratios([1.0], [1.0]) is None


def test_a_candidate_on_another_kind_of_device_is_flagged() -> None:
    base, other, same = _run("base", 1.0), _run("h100", 0.5), _run("fast", 0.5)
    base.manifest = base.manifest.merged({"device_kind": "cuda: NVIDIA H200"})
    other.manifest = other.manifest.merged({"device_kind": "cuda: NVIDIA H100 80GB HBM3"})
    same.manifest = same.manifest.merged({"device_kind": "cuda: NVIDIA H200"})
    table = speed_table(api.compare_results(base, [(other, None), (same, None)]))
    assert "h100 (cuda: NVIDIA H100 80GB HBM3) ran on another kind of device" in table.spread_note
    assert "baseline (cuda: NVIDIA H200)" in table.spread_note and "fast (" not in table.spread_note
    assert table.rows[1].speedups  # said, not withheld: the ratio is still what was measured
    older = speed_table(api.compare_results(_run("base", 1.0), [(_run("fast", 0.5), None)]))
    assert "kind of device" not in older.spread_note  # runs stored before device_kind: nothing claimed
