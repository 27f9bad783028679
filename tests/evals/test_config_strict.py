"""Damaged configs are exit 2 with the file and key named: duplicate keys, inf/nan,
deep and circular extends chains, a parent's typo, meaningless accel ranges."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.evals.files import ConfigError, read_yaml as _read_yaml
from evalrun.evals.config import load_config, load_config_variant
from evalrun.evals.gate import load_gate_file
from tests.conftest import BASE_CONFIG as BASE, CONFIGS, run_cli



def _error(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return info.value


def test_every_shipped_config_loads() -> None:
    files = sorted(CONFIGS.glob("*.yaml"))
    assert len(files) >= 10
    for f in files:
        if "openai" in f.name or f.name == "w8.yaml":
            try:
                load_config(f)
            except ConfigError as exc:  # an optional package (optimum-quanto) may be absent
                assert "not installed" in str(exc), str(exc)
            continue
        load_config(f)


def test_duplicate_key_names_file_line_and_key(cfg_file) -> None:
    f = cfg_file("dup.yaml", BASE + "generation:\n  temperature: 0\n  temperature: 0.5\n")
    err = _error(f)
    assert err.file == str(f) and err.path == "generation.temperature"
    assert "duplicate key 'temperature' at line 9 (first at line 8)" in str(err)


def test_duplicate_key_in_a_list_entry(cfg_file) -> None:
    f = cfg_file("dup.yaml", BASE + "  - pack: doc_fields\n    documents: 2\n    documents: 3\n")
    assert _error(f).path == "tasks[1].documents"


@pytest.mark.slow
def test_duplicate_top_level_key_exits_2_via_cli(cfg_file) -> None:
    f = cfg_file("dup.yaml", BASE + "name: other\n")
    res = run_cli("run", str(f), "--out", str(f.parent / "runs"))
    assert res.returncode == 2, res.stderr
    assert "dup.yaml" in res.stderr and "duplicate key 'name'" in res.stderr
    assert "Traceback" not in res.stderr


def test_gate_file_uses_the_strict_loader(tmp_path: Path) -> None:
    gate = tmp_path / "gate.yaml"
    gate.write_text("confidence: 0.9\nconfidence: 0.95\n")
    with pytest.raises(ConfigError, match="duplicate key 'confidence'"):
        load_gate_file(gate)
    gate.write_text("confidence: 0.9\n")
    assert _read_yaml(gate) == {"confidence": 0.9}  # the gate code's entry point keeps its name and signature


@pytest.mark.parametrize(
    "extra, path",
    [
        ("generation: {temperature: .inf}\n", "generation.temperature"),
        ("generation: {temperature: .nan}\n", "generation.temperature"),
        ("generation: {temperature: inf}\n", "generation.temperature"),  # a string pydantic would read as inf
        ("acceleration: {sparsity: {level: .nan}}\n", "acceleration.sparsity.level"),
        ("acceleration: {kv_cache: {evict: {method: snapkv, ratio: .inf}}}\n", "acceleration.kv_cache.evict.ratio"),
        ("gate: {confidence: .nan}\n", "gate.confidence"),
    ],
)
def test_non_finite_numbers_are_refused(cfg_file, extra: str, path: str) -> None:
    err = _error(cfg_file("inf.yaml", BASE + extra))
    assert err.path == path, str(err)
    assert "finite" in str(err)


def test_non_finite_pack_param_is_refused(cfg_file) -> None:
    err = _error(cfg_file("inf.yaml", BASE.replace("depths: [0.5]", "depths: [.nan]")))
    assert err.path == "tasks[0].depths[0]" and "finite" in str(err)


@pytest.mark.slow
def test_inf_temperature_exits_2_via_cli_and_writes_nothing(cfg_file) -> None:
    f = cfg_file("inf.yaml", BASE + "generation: {temperature: .inf}\n")
    res = run_cli("run", str(f), "--out", str(f.parent / "runs"))
    assert res.returncode == 2, res.stderr
    assert "inf.yaml" in res.stderr and "generation.temperature" in res.stderr
    assert not (f.parent / "runs").exists()


@pytest.mark.slow
def test_deep_extends_chain_is_capped_not_a_recursion_error(tmp_path: Path) -> None:
    (tmp_path / "c1500.yaml").write_text(BASE)
    for i in range(1500):
        (tmp_path / f"c{i}.yaml").write_text(f"extends: c{i + 1}.yaml\n")
    err = _error(tmp_path / "c0.yaml")
    assert err.path == "extends" and "deeper than 64" in str(err)
    res = run_cli("run", str(tmp_path / "c0.yaml"), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2 and "deeper than 64" in res.stderr, res.stderr


def test_a_chain_within_the_cap_resolves(tmp_path: Path) -> None:
    (tmp_path / "c40.yaml").write_text(BASE)
    for i in range(40):
        (tmp_path / f"c{i}.yaml").write_text(f"extends: c{i + 1}.yaml\n" + (f"name: n{i}\n" if i == 0 else ""))
    assert load_config(tmp_path / "c0.yaml").name == "n0"


def test_cycle_shows_the_chain(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: c.yaml\n")
    (tmp_path / "c.yaml").write_text("extends: a.yaml\n")
    err = _error(tmp_path / "a.yaml")
    assert "circular extends: a.yaml -> b.yaml -> c.yaml -> a.yaml" in str(err)
    assert err.file == str(tmp_path / "c.yaml")


@pytest.mark.slow
def test_parent_typo_names_the_parent(cfg_file) -> None:
    parent = cfg_file("parent.yaml", BASE + "generaton: {max_new_tokens: 5}\n")
    child = cfg_file("child.yaml", "extends: parent.yaml\nname: child\n")
    err = _error(child)
    assert err.file == str(parent) and err.path == "generaton" and "unknown key" in str(err)
    res = run_cli("run", str(child), "--out", str(child.parent / "runs"))
    assert res.returncode == 2 and "parent.yaml: generaton: unknown key" in res.stderr, res.stderr


@pytest.mark.parametrize(
    "parent_extra, path",
    [
        ("generation: {max_new_tokns: 5}\n", "generation.max_new_tokns"),
        ("generation: {temperature: -1}\n", "generation.temperature"),
        ("acceleration: {kv_cache: {quant: int4, group_size: 100000}}\n", "acceleration.kv_cache.group_size"),
    ],
)
def test_nested_mistake_in_parent_names_the_parent(cfg_file, parent_extra: str, path: str) -> None:
    parent = cfg_file("parent.yaml", BASE + parent_extra)
    child = cfg_file("child.yaml", "extends: parent.yaml\nname: child\nmodel: smollm2-135m\n")
    err = _error(child)
    assert err.file == str(parent) and err.path == path, str(err)


def test_child_mistake_still_names_the_child(cfg_file) -> None:
    cfg_file("parent.yaml", BASE)
    child = cfg_file("child.yaml", "extends: parent.yaml\ngeneration: {max_new_tokns: 5}\n")
    assert _error(child).file == str(child)


def test_parent_task_data_path_is_relative_to_the_parent(tmp_path: Path) -> None:
    sub = tmp_path / "base"
    sub.mkdir()
    (sub / "docs.jsonl").write_text('{"doc": "Total EUR 5.00", "total": "EUR 5.00"}\n')
    (sub / "parent.yaml").write_text("name: p\ntasks:\n  - {pack: files, path: docs.jsonl, prompt: '{doc}', "
                                     "fields: {total: amount}}\n")
    (tmp_path / "child.yaml").write_text("extends: base/parent.yaml\nname: c\n")
    assert load_config(tmp_path / "child.yaml").tasks[0].params.path == str(sub / "docs.jsonl")


@pytest.mark.parametrize(
    "accel, path",
    [
        ("{kv_cache: {quant: int4, group_size: 100000}}", "acceleration.kv_cache.group_size"),
        ("{kv_cache: {quant: int4, group_size: 1.0e+21}}", "acceleration.kv_cache.group_size"),
        ("{kv_cache: {quant: int4, residual_length: 1000000}}", "acceleration.kv_cache.residual_length"),
        ("{kv_cache: {evict: {method: snapkv, budget: 100000000}}}", "acceleration.kv_cache.evict.budget"),
        ("{kv_cache: {evict: {method: snapkv, budget: 64, window: 100000}}}", "acceleration.kv_cache.evict.window"),
        ("{speculative: {method: prompt_lookup, num_tokens: 100000}}", "acceleration.speculative.num_tokens"),
    ],
)
def test_meaningless_accel_ranges_are_refused(cfg_file, accel: str, path: str) -> None:
    err = _error(cfg_file("acc.yaml", BASE + f"acceleration: {accel}\n"))
    assert err.path == path, str(err)


@pytest.mark.slow
def test_group_size_exits_2_via_cli(cfg_file) -> None:
    f = cfg_file("gs.yaml", BASE + "acceleration: {kv_cache: {quant: int4, backend: simulated, group_size: 1.0e+21}}\n")
    res = run_cli("run", str(f), "--out", str(f.parent / "runs"))
    assert res.returncode == 2 and "acceleration.kv_cache.group_size" in res.stderr, res.stderr


def test_sweep_override_non_finite_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        load_config_variant(CONFIGS / "baseline.yaml", {"generation.temperature": float("inf")}, "x")
    assert info.value.path == "generation.temperature"
