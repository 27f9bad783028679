"""The versioned run manifest: runs written by older evalruns still load, a newer
writer's keys survive a rewrite, and garbage is refused naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrun.contract.manifest import SCHEMA_VERSION, RunManifest
from evalrun.evals.files import ConfigError
from evalrun.evals.results import RunResult
from evalrun.evals.store import RunStore
from tests.conftest import needle_items

# what src/evalrun/evals/run/_manifest.py and src/evalrun/evals/run/_execute.py wrote before the schema was versioned
MAIN_MANIFEST = {
    "name": "int4kv", "replicate": 0, "key": "ab" * 32, "config_file": "configs/int4kv.yaml",
    "config": {"name": "int4kv", "model": "smollm2-135m", "runner": "hf", "device": "auto", "dtype": "auto",
               "generation": {"max_new_tokens": 48, "temperature": 0.0},
               "acceleration": {"kv_cache": {"quant": "int4", "backend": "quanto"}}, "gate": None,
               "tasks": [{"pack": "needle_numbers", "lengths": [512]}]},
    "model": {"spec": "smollm2-135m", "kind": "gguf", "location": "/m/x.gguf", "identity": {"gguf_sha256": "f" * 64}},
    "runner": "hf", "device": "cpu", "dtype": "float32",
    "versions": {"python": "3.12.3", "torch": "2.13.0", "transformers": "4.57.0", "evalrun": "0.1.0"},
    "packs": [{"pack": "needle_numbers", "version": 3, "params": {"lengths": [512]}}],
    "emulated": [], "status": "complete", "created": "2026-01-01T00:00:00+00:00",
    "updated": "2026-01-01T00:01:00+00:00", "items_total": 2, "items_error": 0, "items_sha256": "0" * 64,
    "load_seconds": 1.234, "effects": {"kv_cache": {"kv_bytes_ratio": 0.28, "quant": "int4", "bits": 4}},
    "speed": {"schema": 1, "items": 2, "items_timed": 2, "batch_size_max": 1, "generation_seconds": 2.0,
              "items_per_second": 1.0, "new_tokens": 20, "mean_new_tokens": 10.0, "mean_prompt_tokens": 500.0,
              "tokens_per_second": 10.0, "decode_throughput_tokens_per_second": 12.0,
              "ttft_seconds": {"p50": 0.2, "p95": 0.3, "n": 2},
              "decode_seconds_per_token": {"p50": 0.08, "p95": 0.09, "n": 2},
              "decode_tokens_per_second": {"p50": 12.5, "p95": 13.0, "n": 2},
              "bucket_edges_prompt_tokens": [512, 2048, 8192],
              "buckets": [{"bucket": "<=512", "items": 2, "ttft_seconds": {"p50": 0.2, "p95": 0.3, "n": 2}}],
              "peak_memory": {"bytes": 123456, "kind": "process_peak_rss", "scope": "run"},
              "kv_cache": {"bytes_per_token": 12902.4, "bytes_per_token_full_precision": 46080, "source": "x",
                           "layers": 30, "kv_heads": 3, "head_dim": 64, "element_size": 4,
                           "longest_context_tokens": 560, "bytes_at_longest_context": 7225344},
              "load_seconds": 1.234},
    "batching": {"configured": "auto", "final": 4, "oom_halvings": 0},
    "sessions": [{"started": "2026-01-01T00:00:00+00:00", "finished": "2026-01-01T00:01:00+00:00", "generated": 2,
                  "errors": 0, "seconds": 60.0, "pid": 4242, "host": "ci", "waited_for_lock": False,
                  "status": "complete"}],
}


def test_a_manifest_from_before_versioning_loads_typed_and_unchanged() -> None:
    m = RunManifest.model_validate(MAIN_MANIFEST)
    assert m.schema_version == 1
    assert m.model.identity["gguf_sha256"] == "f" * 64 and m.versions.torch == "2.13.0"
    assert m.speed.peak_memory.bytes == 123456 and m.speed.kv_cache.bytes_per_token == pytest.approx(12902.4)
    assert m.speed.speed_schema == 1 and m.speed.buckets[0].bucket == "<=512"
    # keys of an older speed schema are kept as written (the reports recompute from the generations)
    assert m.speed.model_extra["ttft_seconds"]["p50"] == 0.2
    assert m.sessions[0].pid == 4242 and m.batching.configured == "auto"
    assert m.effects["kv_cache"].kv_bytes_ratio == 0.28 and m.effects["kv_cache"].model_extra == {"quant": "int4",
                                                                                                   "bits": 4}
    assert m.config.acceleration["kv_cache"]["quant"] == "int4" and m.config.gate is None
    assert m.to_dict() == MAIN_MANIFEST, "reading and writing back changes nothing"


def test_an_older_manifest_without_the_newest_keys_loads() -> None:
    old = {k: v for k, v in MAIN_MANIFEST.items() if k != "items_sha256"}
    old["sessions"] = [{k: v for k, v in s.items() if k not in ("pid", "host")} for s in old["sessions"]]
    del old["batching"]
    m = RunManifest.model_validate(old)
    assert m.items_sha256 is None and m.sessions[0].pid is None and m.batching is None
    assert RunManifest.model_validate({}).name is None


def test_a_newer_writers_keys_survive_a_rewrite(tmp_path: Path) -> None:
    newer = MAIN_MANIFEST | {"schema_version": SCHEMA_VERSION + 5, "carbon_grams": 3.5,
                             "speed": MAIN_MANIFEST["speed"] | {"energy_joules": 12}}
    newer["sessions"] = [MAIN_MANIFEST["sessions"][0] | {"gpu_uuid": "GPU-1"}]
    m = RunManifest.model_validate(newer).merged({"items_sha256": "1" * 64, "schema_version": SCHEMA_VERSION})
    again = m.with_session({"generated": 1, "pid": 7})
    store = RunStore(tmp_path / "run")
    store.write_manifest(again)
    stored = json.loads(store.manifest_path.read_text())
    assert stored["carbon_grams"] == 3.5 and stored["speed"]["energy_joules"] == 12
    assert stored["sessions"][0]["gpu_uuid"] == "GPU-1" and stored["sessions"][1]["pid"] == 7
    assert stored["schema_version"] == SCHEMA_VERSION + 5, "an older writer never lowers the version"
    assert stored["items_sha256"] == "1" * 64


def test_the_store_refuses_garbage_and_a_manifest_off_its_schema(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.write_items(needle_items()[:1])
    store.manifest_path.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        RunResult.load(store.dir)
    store.write_manifest(MAIN_MANIFEST | {"items_sha256": None, "sessions": "yesterday"})
    with pytest.raises(ConfigError, match="sessions") as exc:
        RunResult.load(store.dir)
    assert str(store.manifest_path) in str(exc.value)


@pytest.mark.slow
def test_a_run_written_by_the_tiny_model_loads(tiny_model_dir: Path, tmp_path: Path) -> None:
    from tests.conftest import run_cli, tiny_config
    import yaml

    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config(tiny_model_dir)))
    proc = run_cli("run", str(cfg), "--out", str(tmp_path / "runs"), "--limit", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [run_dir] = (tmp_path / "runs").iterdir()
    written = json.loads((run_dir / "manifest.json").read_text())
    assert written["schema_version"] == SCHEMA_VERSION
    result = RunResult.load(run_dir)
    assert result.manifest.to_dict() == written
    assert result.manifest.sessions[-1].pid and result.manifest.items_sha256 and result.manifest.speed.items == 2
