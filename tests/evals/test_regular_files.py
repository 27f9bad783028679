"""Only regular files of bounded size are read as configs, extended configs, gate files and pack data:
`extends: /dev/zero` would read until memory ran out and a FIFO would block open() until a writer came.
Each is a ConfigError (exit 2) naming the file and the key, returned at once, before anything is read."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Iterator

import pytest
import yaml

from evalrun.contract.user_files import MAX_DATA_BYTES, MAX_YAML_BYTES
from evalrun.evals.config import load_config
from evalrun.evals.files import ConfigError
from evalrun.evals.gate import load_gate_file
from tests.conftest import run_cli
from tests.machine import timed

PROMPTLY = 5.0  # seconds: after this a reader stuck on a FIFO is released by a writer, and the test fails


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """A FIFO maker: a reader that blocks on one is released after PROMPTLY seconds (a writer opens
    and closes it), so a regression fails the test instead of hanging the suite."""
    made: list[Path] = []
    done = threading.Event()

    def release() -> None:
        while not done.wait(PROMPTLY):
            for path in made:
                try:  # succeeds only while a reader waits on it
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass

    guard = threading.Thread(target=release, daemon=True)
    guard.start()

    def make(name: str) -> Path:
        path = tmp_path / name
        os.mkfifo(path)
        made.append(path)
        return path

    yield make
    done.set()
    guard.join()


def _sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk."""
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


def _config(path: Path, **over: object) -> Path:
    body = {"name": "c", "tasks": [{"pack": "needle_numbers", "lengths": [96], "depths": [0.0]}], **over}
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def _refused(load: Callable[[], object]) -> ConfigError:
    with timed() as t, pytest.raises(ConfigError) as exc:
        load()
    assert t.wall < PROMPTLY, f"took {t.wall:.1f} s: it waited on the file"
    assert "\n" not in str(exc.value)
    return exc.value


def test_extends_dev_zero_is_refused_naming_the_file_and_key(tmp_path: Path) -> None:
    cfg = _config(tmp_path / "c.yaml", extends="/dev/zero")
    err = _refused(lambda: load_config(cfg))
    assert err.file == str(cfg.resolve()) and err.path == "extends"
    assert "/dev/zero" in err.message and "not a regular file" in err.message and "character device" in err.message


def test_extends_a_link_to_a_device_or_a_fifo_returns_promptly(tmp_path: Path, fifo: Callable[[str], Path]) -> None:
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    err = _refused(lambda: load_config(_config(tmp_path / "a.yaml", extends="zero.yaml")))
    assert err.path == "extends" and "character device" in err.message
    fifo("pipe.yaml")
    err = _refused(lambda: load_config(_config(tmp_path / "b.yaml", extends="pipe.yaml")))
    assert err.path == "extends" and "pipe.yaml" in err.message and "FIFO" in err.message


def test_a_config_that_is_a_fifo_or_too_large_is_refused(tmp_path: Path, fifo: Callable[[str], Path]) -> None:
    pipe = fifo("c.yaml")
    err = _refused(lambda: load_config(pipe))
    assert err.file is not None and err.file.endswith("c.yaml") and "FIFO" in err.message
    big = _sparse(tmp_path / "big.yaml", MAX_YAML_BYTES + 1)
    err = _refused(lambda: load_config(big))
    assert "big.yaml" in str(err) and f"over the {MAX_YAML_BYTES:,} bytes" in err.message
    parent = _sparse(tmp_path / "parent.yaml", MAX_YAML_BYTES + 1)
    err = _refused(lambda: load_config(_config(tmp_path / "child.yaml", extends=parent.name)))
    assert err.path == "extends" and "parent.yaml" in err.message and "over the" in err.message


def test_a_gate_file_that_is_a_device_fifo_or_too_large_is_refused(tmp_path: Path,
                                                                   fifo: Callable[[str], Path]) -> None:
    err = _refused(lambda: load_gate_file("/dev/zero"))
    assert err.file == "/dev/zero" and "character device" in err.message
    err = _refused(lambda: load_gate_file(fifo("gate.yaml")))
    assert err.file is not None and err.file.endswith("gate.yaml") and "FIFO" in err.message
    err = _refused(lambda: load_gate_file(_sparse(tmp_path / "g.yaml", MAX_YAML_BYTES + 1)))
    assert "over the" in err.message


def _files_config(tmp: Path, data: Path) -> Path:
    return _config(tmp / f"files-{data.name}.yaml",
                   tasks=[{"pack": "files", "path": str(data), "prompt": "{doc}\nTotal?",
                           "fields": {"total": "amount"}}])


def test_pack_data_that_is_a_device_fifo_or_too_large_is_refused(tmp_path: Path,
                                                                 fifo: Callable[[str], Path]) -> None:
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    err = _refused(lambda: load_config(_files_config(tmp_path, tmp_path / "zero.jsonl")))
    assert err.path == "tasks[0].path" and "zero.jsonl" in err.message and "character device" in err.message
    err = _refused(lambda: load_config(_files_config(tmp_path, fifo("pipe.csv"))))
    assert err.path == "tasks[0].path" and "FIFO" in err.message
    big = _sparse(tmp_path / "big.parquet", MAX_DATA_BYTES + 1)
    err = _refused(lambda: load_config(_files_config(tmp_path, big)))
    assert err.path == "tasks[0].path" and f"over the {MAX_DATA_BYTES:,} bytes" in err.message


def test_check_exits_2_with_one_line_for_extends_dev_zero(tmp_path: Path) -> None:
    cfg = _config(tmp_path / "c.yaml", extends="/dev/zero")
    res = run_cli("check", str(cfg), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stdout + res.stderr[-500:]
    [line] = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert str(cfg.resolve()) in line and "extends" in line and "/dev/zero" in line
