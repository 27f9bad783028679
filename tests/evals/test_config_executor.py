"""`executor:` and `ray:` in a config, and `--ray` applied to loaded configs: what runs on Ray,
what stays in process and says why, and every misuse one line naming the key."""

from __future__ import annotations

import sys

import pytest

from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config, ray_variant
from evalrun.evals.run import key_payload, prepare
from evalrun.evals.store import run_key
from tests.conftest import BASE_CONFIG as BASE


def _error(cfg_file, body: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(cfg_file("c.yaml", BASE + body))
    return info.value


def test_ray_settings_load_and_stay_out_of_the_key(cfg_file) -> None:
    plain = load_config(cfg_file("a.yaml", BASE))
    on_ray = load_config(cfg_file("b.yaml", BASE + "executor: ray\nray: {actors: 2, cpus_per_actor: 1, prefetch: 0}\n"))
    assert on_ray.executor == "ray" and on_ray.ray is not None and on_ray.ray.actors == 2
    from evalrun.runners.models import resolve_model

    source = resolve_model(plain.model)
    assert run_key(key_payload(plain, source, "cpu", "float32")) == run_key(key_payload(on_ray, source, "cpu", "float32"))


def test_ray_without_executor_ray_names_the_key(cfg_file) -> None:
    exc = _error(cfg_file, "ray: {actors: 2}\n")
    assert exc.path == "ray" and "only used with executor: ray" in exc.message


def test_unknown_ray_key_names_it(cfg_file) -> None:
    exc = _error(cfg_file, "executor: ray\nray: {actor: 2}\n")
    assert exc.path == "ray.actor"


def test_executor_ray_with_continuous_batching_is_refused(cfg_file) -> None:
    exc = _error(cfg_file, "executor: ray\nbatching: {mode: continuous}\n")
    assert exc.path == "executor" and "in process only" in exc.message


def test_executor_ray_with_the_openai_runner_is_refused(cfg_file) -> None:
    body = ("name: served\nmodel: m\nrunner: openai\nopenai: {base_url: 'http://127.0.0.1:9/v1'}\nexecutor: ray\n"
            "tasks:\n  - pack: needle_numbers\n    lengths: [512]\n    depths: [0.5]\n")
    with pytest.raises(ConfigError) as info:
        load_config(cfg_file("s.yaml", body))
    assert info.value.path == "executor" and "data-parallel" in info.value.message


def test_ray_variant_keeps_served_and_continuous_configs_in_process(cfg_file) -> None:
    hf = load_config(cfg_file("a.yaml", BASE + "ray: null\n"))
    changed, why = ray_variant(hf, "ray://head:10001")
    assert why is None and changed.executor == "ray" and changed.ray.address == "ray://head:10001"
    paged = load_config(cfg_file("p.yaml", BASE + "batching: {mode: continuous}\n"))
    same, why = ray_variant(paged, None)
    assert same is paged and "continuous" in why


def test_without_ray_installed_the_error_says_how_to_install(cfg_file, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without the extra looks like
    config = load_config(cfg_file("b.yaml", BASE + "executor: ray\n"))
    with pytest.raises(ConfigError) as info:
        prepare(config, "runs-never-written")
    assert info.value.path == "executor" and "pip install 'evalrun[ray]'" in info.value.message
