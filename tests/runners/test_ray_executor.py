"""executor: ray on a local Ray instance (2 CPUs): the same batches and outputs as in process,
the driver the store's one writer, and an actor killed mid-run losing and duplicating nothing."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import ray

from evalrun.evals.config import parse_config
from evalrun.evals.run import RunFailed, execute, prepare
from evalrun.runners.ray import executor as ray_executor
from tests.conftest import tiny_config

RAY = {"actors": 2, "cpus_per_actor": 1}
# 18 needle items; at batch 2 the plan is 9 units, enough to kill an actor in the middle
MANY = [{"pack": "needle_numbers", "lengths": [96, 128, 160, 200, 240, 280], "depths": [0.0, 0.5, 1.0],
         "values": ["integer"]}]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    if not ray.is_initialized():
        ray.init(**ray_executor.local_options(num_cpus=2))
    yield
    ray_executor.close_pools()


def _run(model: Path, out: Path, ray_settings: dict | None = None, **over: Any):
    data = tiny_config(model, **over)
    if ray_settings is not None:
        data |= {"executor": "ray", "ray": ray_settings}
    prepared = prepare(parse_config(data), out)
    return prepared, execute(prepared, log=lambda _: None)


def _stored_lines(run_dir: Path) -> list[dict]:
    return [json.loads(ln) for ln in (run_dir / "samples.jsonl").read_text().splitlines() if ln.strip()]


@pytest.mark.slow
def test_ray_generates_the_in_process_batches_and_outputs(tiny_model_dir: Path, tmp_path: Path) -> None:
    _, local = _run(tiny_model_dir, tmp_path / "a")
    prepared, remote = _run(tiny_model_dir, tmp_path / "b", RAY)
    assert remote.manifest["key"] == local.manifest["key"]  # the executor changes no output: same key
    for item_id, gen in local.generations.items():
        other = remote.generations[item_id]
        assert (other.output_ids, other.output, other.batch_size) == (gen.output_ids, gen.output, gen.batch_size)
    # the actors' prefill, summed, is the in-process runner's
    keys = ("prompt_tokens", "padded_prefill_tokens", "padding_share")
    assert {k: remote.manifest["batching"][k] for k in keys} == {k: local.manifest["batching"][k] for k in keys}
    executor = remote.manifest["executor"]
    assert executor["kind"] == "ray" and len(executor["actors"]) == 2
    produced = [i for a in executor["actors"] for i in a["item_ids"]]
    assert sorted(produced) == sorted(local.generations) and executor["failures"] == []
    assert all(a["device_kind"].startswith("cpu") and a["pid"] != os.getpid() for a in executor["actors"])
    assert remote.manifest["device_kind"] == local.manifest["device_kind"]
    assert prepared.runner.local.model is None  # the driver never loaded the model
    assert len(_stored_lines(remote.dir)) == len(local.generations)
    # the actors do the work at the driver's priority (Ray's default niceness 15 starves them on a busy machine)
    assert {os.getpriority(os.PRIO_PROCESS, a.info["pid"]) for a in prepared.runner.actors} == {os.getpriority(os.PRIO_PROCESS, 0)}


@pytest.mark.slow
def test_methods_effects_are_merged_over_actors(tiny_model_dir: Path, tmp_path: Path) -> None:
    accel = {"kv_cache": {"quant": "int4", "backend": "simulated", "group_size": 16, "residual_length": 8}}
    _, local = _run(tiny_model_dir, tmp_path / "a", acceleration=accel, tasks=MANY, batch_size=2)
    _, remote = _run(tiny_model_dir, tmp_path / "b", RAY, acceleration=accel, tasks=MANY, batch_size=2)
    mine, theirs = local.manifest.effects["kv_cache"].model_dump(), remote.manifest.effects["kv_cache"].model_dump()
    assert theirs["workers"] == 2  # both actors generated some of it
    for key in ("generate_calls", "kv_bytes_stored", "kv_bytes_full_precision", "kv_bytes_ratio", "max_cached_tokens"):
        assert theirs[key] == mine[key], key
    for item_id, gen in local.generations.items():
        assert remote.generations[item_id].output_ids == gen.output_ids


@pytest.mark.slow
def test_prefix_reuse_units_keep_each_document_together(tiny_model_dir: Path, tmp_path: Path) -> None:
    tasks = [{"pack": "doc_fields", "documents": 2, "lengths": [400], "mode": "per_field", "doc_types": ["invoice"],
              "fields": ["total", "tax", "due_date", "invoice_number", "currency", "subtotal"]}]
    over = {"tasks": tasks, "prefix_reuse": True, "generation": {"max_new_tokens": 12}}
    _, local = _run(tiny_model_dir, tmp_path / "a", **over)
    _, remote = _run(tiny_model_dir, tmp_path / "b", RAY, **over)
    assert remote.manifest["prefix_reuse"] == local.manifest["prefix_reuse"]
    assert remote.manifest["prefix_reuse"]["documents"] == 2
    for item_id, gen in local.generations.items():
        assert remote.generations[item_id].output_ids == gen.output_ids


def _kill_after_first_unit(prepared: Any, victim: str = "actor-1") -> list[int]:
    """Kill one actor's process (SIGKILL, as the kernel's OOM killer would) once a unit came back."""
    killed: list[int] = []

    def hook(actor: str, done: int) -> None:
        if not killed:
            target = next(a for a in prepared.runner.actors if a.name == victim)
            os.kill(target.info["pid"], signal.SIGKILL)
            killed.append(target.info["pid"])

    prepared.runner.on_unit = hook
    return killed


@pytest.mark.slow
def test_a_killed_actor_loses_and_duplicates_nothing(tiny_model_dir: Path, tmp_path: Path) -> None:
    _, local = _run(tiny_model_dir, tmp_path / "a", tasks=MANY, batch_size=2)
    ray_executor.close_pools()  # a pool of its own: the one this test kills
    prepared = prepare(parse_config(tiny_config(tiny_model_dir, tasks=MANY, batch_size=2, executor="ray", ray=RAY)),
                       tmp_path / "b")
    killed = _kill_after_first_unit(prepared)
    remote = execute(prepared, log=lambda _: None)
    assert killed
    lines = _stored_lines(remote.dir)
    assert sorted(ln["item_id"] for ln in lines) == sorted(local.generations)  # all, none twice
    for item_id, gen in local.generations.items():
        assert remote.generations[item_id].output_ids == gen.output_ids
    executor = remote.manifest["executor"]
    [failure] = executor["failures"]
    assert failure["actor"] == "actor-1" and failure["units_requeued"] >= 1 and not failure["restarted"]
    statuses = {a["actor"]: a["status"] for a in executor["actors"]}
    assert statuses == {"actor-0": "alive", "actor-1": "died"}
    assert sum(a["items"] for a in executor["actors"]) == len(local.generations)
    ray_executor.close_pools()


@pytest.mark.slow
def test_a_restarted_actor_is_registered_again(tiny_model_dir: Path, tmp_path: Path) -> None:
    _, local = _run(tiny_model_dir, tmp_path / "a", tasks=MANY, batch_size=2)
    settings = RAY | {"max_restarts": 1}
    prepared = prepare(parse_config(tiny_config(tiny_model_dir, tasks=MANY, batch_size=2, executor="ray",
                                                ray=settings)), tmp_path / "b")
    _kill_after_first_unit(prepared)
    remote = execute(prepared, log=lambda _: None)
    assert sorted(ln["item_id"] for ln in _stored_lines(remote.dir)) == sorted(local.generations)
    [failure] = remote.manifest["executor"]["failures"]
    assert failure["restarted"]
    back = next(a for a in remote.manifest["executor"]["actors"] if a["actor"] == "actor-1")
    assert back["status"] == "alive" and back["restarts"] == 1
    ray_executor.close_pools()


@pytest.mark.slow
def test_every_actor_lost_keeps_what_was_stored_and_resumes(tiny_model_dir: Path, tmp_path: Path) -> None:
    data = tiny_config(tiny_model_dir, tasks=MANY, batch_size=2, executor="ray", ray={"actors": 1})
    prepared = prepare(parse_config(data), tmp_path)
    _kill_after_first_unit(prepared, victim="actor-0")
    with pytest.raises(RunFailed, match="every Ray actor is gone"):
        execute(prepared, log=lambda _: None)
    stored = _stored_lines(prepared.dir)
    assert 0 < len(stored) < len(prepared.items)
    ray_executor.close_pools()
    again = prepare(parse_config(data), tmp_path)
    resumed = execute(again, log=lambda _: None)
    lines = _stored_lines(resumed.dir)
    assert sorted(ln["item_id"] for ln in lines) == sorted(it.id for it in prepared.items)
    # resume sent only the missing items to the actors
    assert sum(a["items"] for a in resumed.manifest["executor"]["actors"]) == len(prepared.items) - len(stored)
    ray_executor.close_pools()


@pytest.mark.slow
def test_a_pool_larger_than_the_cluster_is_a_clear_failure(tiny_model_dir: Path, tmp_path: Path) -> None:
    data = tiny_config(tiny_model_dir, executor="ray", ray={"actors": 3, "cpus_per_actor": 1})
    with pytest.raises(RunFailed, match=r"ray.actors: 3 actor\(s\) of 1 CPU each do not fit"):
        execute(prepare(parse_config(data), tmp_path), log=lambda _: None)
