"""Several actors' effects of one method as one record: counters add, maxima stay maxima, rates
come from summed parts, other figures are weighted by calls, and nothing is silently dropped."""

from __future__ import annotations

from evalrun.runners.accel.base import merge_effects
from evalrun.runners.accel.kv_cache import KVCache
from evalrun.runners.accel.speculative import SpeculativeDecoding


def test_one_part_is_itself() -> None:
    assert merge_effects([{"generate_calls": 3, "x": 0.5}]) == {"generate_calls": 3, "x": 0.5}
    assert merge_effects([]) == {}


def test_counters_add_settings_stay_and_maxima_stay_maxima() -> None:
    counters = frozenset({"generate_calls", "kv_bytes_stored"})
    out = merge_effects([{"generate_calls": 2, "kv_bytes_stored": 7, "max_cached_tokens": 90, "group_size": 64,
                          "backend": "quanto"},
                         {"generate_calls": 3, "kv_bytes_stored": 7, "max_cached_tokens": 120, "group_size": 64,
                          "backend": "quanto"}], counters)
    # a counter equal on both workers is still summed; a setting equal on both is kept
    assert out == {"generate_calls": 5, "kv_bytes_stored": 14, "max_cached_tokens": 120, "group_size": 64,
                   "backend": "quanto", "workers": 2}


def test_rates_are_recomputed_from_summed_parts() -> None:
    parts = [{"accepted_tokens": 10, "drafted_tokens": 40, "acceptance_rate": 0.25,
              "tokens_generated": 30, "verify_rounds": 10, "tokens_per_target_forward": 3.0},
             {"accepted_tokens": 30, "drafted_tokens": 40, "acceptance_rate": 0.75,
              "tokens_generated": 10, "verify_rounds": 10, "tokens_per_target_forward": 1.0}]
    out = SpeculativeDecoding.merged_effects(parts)
    assert out["acceptance_rate"] == 0.5 and out["tokens_per_target_forward"] == 2.0


def test_kv_ratio_follows_eviction_or_quantization_bytes() -> None:
    quant = KVCache.merged_effects([{"kv_bytes_stored": 10, "kv_bytes_full_precision": 100, "kv_bytes_ratio": 0.1},
                                    {"kv_bytes_stored": 30, "kv_bytes_full_precision": 100, "kv_bytes_ratio": 0.3}])
    assert quant["kv_bytes_ratio"] == 0.2
    evict = KVCache.merged_effects([{"kv_bytes_kept": 50, "kv_bytes_full_precision": 100, "kv_bytes_ratio": 0.5},
                                    {"kv_bytes_kept": 10, "kv_bytes_full_precision": 300, "kv_bytes_ratio": 0.0333}])
    assert evict["kv_bytes_ratio"] == 0.15


def test_other_figures_are_weighted_by_calls_and_named_counters_add() -> None:
    out = merge_effects([{"generate_calls": 1, "prompt_tokens_mean": 100.0, "warmup_seconds": 2.0,
                          "per_layer": [0.2, 0.4]},
                         {"generate_calls": 3, "prompt_tokens_mean": 200.0, "warmup_seconds": 3.0,
                          "per_layer": [0.6, 0.8]}], frozenset({"generate_calls", "warmup_seconds"}))
    assert out["prompt_tokens_mean"] == 175.0 and out["warmup_seconds"] == 5.0
    assert out["per_layer"] == [0.5, 0.7]


def test_model_properties_equal_on_every_worker_are_not_multiplied() -> None:
    from evalrun.runners.accel.weights import WeightQuant

    part = {"linear_modules": 210, "quantized_modules": 210, "linear_weight_bytes_before": 100,
            "linear_weight_bytes_after": 41, "weight_bytes_ratio": 0.41}
    assert WeightQuant.merged_effects([part, dict(part)]) == part | {"workers": 2}


def test_a_named_weight_is_used_and_nested_mappings_merge() -> None:
    out = merge_effects([{"entries_counted": 100, "achieved_level": 0.4, "calls": {"sdpa": 3}},
                         {"entries_counted": 300, "achieved_level": 0.6, "calls": {"sdpa": 5, "eager": 1}}],
                        frozenset({"entries_counted", "calls"}), weights={"achieved_level": "entries_counted"})
    assert out["achieved_level"] == 0.55 and out["calls"] == {"sdpa": 8, "eager": 1}


def test_flags_hold_only_if_they_hold_everywhere_and_strings_are_all_kept() -> None:
    out = merge_effects([{"kept_exactly_as_configured": True, "used": "sdpa"},
                         {"kept_exactly_as_configured": False, "used": "eager"}])
    assert out["kept_exactly_as_configured"] is False and out["used"] == ["sdpa", "eager"]
