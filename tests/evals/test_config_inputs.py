"""User errors are exit 2 before anything is generated, `check` included: a YAML alias bomb fails
fast, a name too long for a run directory is refused by `check` and `compare` alike, and an
--out that is a file or a folder evalrun cannot write is refused naming it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from evalrun.evals import api
from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config
from tests.conftest import run_cli, tiny_config
from tests.machine import timed, within


def _bomb(path: Path, depth: int) -> Path:
    """`slo.ttft` a list of anchors, each ten aliases of the one before: 10**(depth+1) values."""
    lines = ["name: bomb", "tasks:", "  - {pack: needle_numbers, lengths: [96], depths: [0.0]}", "slo:", "  ttft:",
             '    - &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"    - &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, depth + 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_an_alias_bomb_fails_fast_naming_the_file(tmp_path: Path) -> None:
    path = _bomb(tmp_path / "bomb.yaml", 6)  # 10**7 values once expanded (depth 9 would be minutes and gigabytes)
    with timed() as t, pytest.raises(ConfigError) as exc:
        load_config(path)
    within(t, 2, "refusing an alias bomb")
    message = str(exc.value)
    assert message.startswith(f"{path}: its aliases (*name) expand it to more than 100,000 values"), message[:300]
    assert len(message) < 400


@pytest.mark.slow
def test_an_alias_bomb_exits_2_via_check(tmp_path: Path) -> None:
    path = _bomb(tmp_path / "bomb.yaml", 9)
    res = run_cli("check", str(path), "--out", str(tmp_path / "runs"), timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr[-500:]
    assert f"{path}: its aliases" in res.stderr and len(res.stderr) < 1000


def test_a_value_that_contains_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "self.yaml"
    path.write_text("name: loop\ntasks: &t\n  - {pack: needle_numbers}\n  - *t\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="refers to a value that contains it"):
        load_config(path)


def test_shared_values_within_the_limit_still_load(tmp_path: Path) -> None:
    path = tmp_path / "shared.yaml"
    path.write_text("name: shared\ntiming_batches: &n 8\ngeneration: {max_new_tokens: *n}\ntasks:\n"
                    "  - {pack: needle_numbers, lengths: [96], depths: [0.0]}\n", encoding="utf-8")
    assert load_config(path).generation.max_new_tokens == 8


@pytest.mark.slow
def test_a_name_too_long_for_a_run_directory_is_refused_by_check_and_compare_alike(
        tmp_path: Path, tiny_model_dir: Path) -> None:
    """300 characters: `check` used to accept it and `compare` to fail (exit 3) after generating the baseline."""
    base, long = tmp_path / "base.yaml", tmp_path / "long.yaml"
    base.write_text(yaml.safe_dump(tiny_config(tiny_model_dir, name="base")))
    long.write_text(yaml.safe_dump(tiny_config(tiny_model_dir, name="n" * 300)))
    out = tmp_path / "runs"
    lines = []
    for args in (("check", str(long)), ("compare", str(base), str(long))):
        res = run_cli(*args, "--out", str(out))
        assert res.returncode == 2, res.stdout + res.stderr[-500:]
        lines.append(" ".join(res.stderr.split()))
    assert lines[0] == lines[1] and lines[0].startswith(f"error: {long}: name: 300 characters, at most 128")
    assert not out.exists(), "nothing generated"


@pytest.mark.slow
def test_out_that_is_a_file_is_refused_by_check_and_run(tmp_path: Path, tiny_model_dir: Path) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config(tiny_model_dir)))
    taken = tmp_path / "taken"
    taken.write_text("a file\n")
    for command in ("check", "run"):
        res = run_cli(command, str(cfg), "--out", str(taken))
        assert res.returncode == 2, res.stdout + res.stderr[-500:]
        assert f"{taken}: the run store folder (--out) cannot be a file" in " ".join(res.stderr.split())
    assert taken.read_text() == "a file\n"


@pytest.mark.parametrize("where", ["folder", "below"])
def test_out_that_cannot_be_written_is_refused_before_anything_is_built(
        tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    if os.geteuid() == 0:  # root writes anywhere a mode forbids: answer as the kernel does for anyone else
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == locked and mode & os.W_OK
                            else real(p, mode, **kw))
    config = api.load(_written(tmp_path, tiny_model_dir))
    out = locked if where == "folder" else locked / "runs"
    try:
        for action in (lambda: api.check([config], out=out), lambda: api.run(config, out=out, log=lambda _m: None)):
            with pytest.raises(ConfigError) as exc:
                action()
            assert str(exc.value).startswith(f"{out}: the run store folder (--out) is not writable")
            assert "no permission to write there" in str(exc.value)
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o755)


def _written(tmp_path: Path, model: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_config(model)))
    return path
