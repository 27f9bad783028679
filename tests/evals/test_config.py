"""Configuration loading: `extends`, strict validation, and one clear message per mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config
from tests.conftest import BASE_CONFIG as BASE, CONFIGS, run_cli



def test_example_configs_load() -> None:
    base = load_config(CONFIGS / "baseline.yaml")
    int4 = load_config(CONFIGS / "int4kv.yaml")
    assert base.name == "baseline" and int4.name == "int4kv"
    assert int4.tasks_dump() == base.tasks_dump(), "a candidate must inherit the baseline's tasks"
    assert not base.acceleration and base.acceleration.model_dump(mode="json") == {}
    assert int4.acceleration["kv_cache"].quant == "int4"
    assert int4.acceleration["kv_cache"].backend == "hqq"  # the default, maintained backend


def test_extends_is_relative_to_the_file_and_deep_merges(tmp_path: Path, cfg_file) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    cfg_file("base.yaml", BASE + "generation: {max_new_tokens: 20, temperature: 0}\n")
    child = sub / "child.yaml"
    child.write_text("extends: ../base.yaml\nname: child\ngeneration: {max_new_tokens: 7}\n")
    cfg = load_config(child)
    assert cfg.name == "child"
    assert cfg.generation.max_new_tokens == 7
    assert cfg.generation.temperature == 0
    assert cfg.tasks[0].params.lengths == [512]


@pytest.mark.parametrize(
    "body, path, words",
    [
        (BASE + "modle: x\n", "modle", ["unknown key", "model"]),
        (BASE + "generation: {max_new_tokns: 5}\n", "generation.max_new_tokns", ["unknown key", "max_new_tokens"]),
        (BASE + "generation: {max_new_tokens: lots}\n", "generation.max_new_tokens", ["integer"]),
        (BASE + "batch_size: 0\n", "batch_size", ["from 1 to 1024", "auto"]),
        (BASE + "device: tpu\n", "device", ["allowed", "cuda"]),
        (BASE.replace("needle_numbers", "needles"), "tasks[0].pack", ["unknown pack", "needle_numbers"]),
        (BASE.replace("lengths: [512]", "lenghts: [512]"), "tasks[0].lenghts", ["unknown key", "lengths"]),
        (BASE.replace("depths: [0.5]", "depths: [1.5]"), "tasks[0].depths", ["between 0.0 and 1.0"]),
        ("name: x\n", "tasks", ["non-empty list"]),
        (BASE + "acceleration: {kv_cash: {quant: int4}}\n", "acceleration.kv_cash", ["unknown acceleration", "kv_cache"]),
        (BASE + "acceleration: {kv_cache: {quant: int9}}\n", "acceleration.kv_cache.quant", ["allowed", "int4"]),
        (BASE + "acceleration: {kv_cache: {quant: int5}}\n", "acceleration.kv_cache", ["not supported by backend hqq", "simulated"]),
        (BASE + "acceleration: {kv_cache: {quant: int8, backend: quanto}}\n", "acceleration.kv_cache",
         ["not supported by backend quanto", "quanto: int2, int4"]),
        (BASE + "acceleration: {kv_cache: {quant: int4, groupsize: 32}}\n", "acceleration.kv_cache.groupsize",
         ["unknown key", "group_size"]),
        (BASE + "acceleration: {kv_cache: {quant: int4, backend: quanto, axis_key: 1}}\n", "acceleration.kv_cache",
         ["axis_key 1 is not supported"]),
        (BASE + "extends: missing.yaml\n", "extends", ["not found"]),
        (BASE.replace("name: base", "name: 'bad name!'"), "name", ["pattern"]),
    ],
    ids=lambda v: v if isinstance(v, str) and "\n" not in v and len(v) < 40 else None,
)
def test_bad_config_names_file_and_key(cfg_file, body: str, path: str, words: list[str]) -> None:
    f = cfg_file("bad.yaml", body)
    with pytest.raises(ConfigError) as info:
        load_config(f)
    message = str(info.value)
    assert str(f) in message
    assert f"{path}:" in message, message
    for word in words:
        assert word in message, message


def test_hqq_backend_needs_its_package(cfg_file) -> None:
    import importlib.util

    if importlib.util.find_spec("hqq") is not None:
        pytest.skip("hqq is installed here")
    f = cfg_file("hqq.yaml", BASE + "acceleration: {kv_cache: {quant: int4, backend: hqq}}\n")
    with pytest.raises(ConfigError, match="needs the package 'hqq'"):
        load_config(f)


def test_yaml_syntax_error_names_the_line(cfg_file) -> None:
    f = cfg_file("broken.yaml", "name: x\ntasks: [\n  - pack: needle_numbers\n")
    with pytest.raises(ConfigError, match=r"YAML syntax error at line \d+"):
        load_config(f)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml")


def test_circular_extends(cfg_file) -> None:
    cfg_file("a.yaml", "extends: b.yaml\n")
    b = cfg_file("b.yaml", "extends: a.yaml\n")
    with pytest.raises(ConfigError, match="circular extends"):
        load_config(b)


@pytest.mark.slow
def test_cli_config_error_exits_2_without_traceback(cfg_file, tmp_path: Path) -> None:
    bad = cfg_file("typo.yaml", BASE + "generaton: {max_new_tokens: 5}\n")
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(bad), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stderr
    assert "generaton" in res.stderr and "unknown key" in res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert not (tmp_path / "runs").exists(), "nothing may run when a config is invalid"


@pytest.mark.slow
def test_cli_missing_file_exits_2(tmp_path: Path) -> None:
    res = run_cli("run", str(tmp_path / "absent.yaml"))
    assert res.returncode == 2
    assert "file not found" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_cli_unknown_model_exits_2(cfg_file, tmp_path: Path) -> None:
    f = cfg_file("m.yaml", BASE.replace("smollm2-135m", "./no/such/model.gguf"))
    res = run_cli("run", str(f), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stderr
    assert "model:" in res.stderr and "not found" in res.stderr
