"""Report outputs: checked before any generation, written atomically, and one
that fails never costs the others."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from evalrun.cli_outputs import Outputs
from evalrun.evals.files import ConfigError, write_atomic
from evalrun.evals.speed import speed_table
from tests.conftest import run_cli, tiny_config
from tests.conftest import make_report


@pytest.mark.parametrize("option", ["--html", "--junit"])
@pytest.mark.slow
def test_output_that_is_a_directory_is_exit_2_before_generation(tmp_path: Path, tiny_model_dir: Path,
                                                                option: str) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config(tiny_model_dir)))
    (tmp_path / "adir").mkdir()
    res = run_cli("compare", str(cfg), str(cfg), "--out", str(tmp_path / "runs"), option, str(tmp_path / "adir"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{tmp_path / 'adir'}: {option}: is a directory" in " ".join(res.stderr.split())
    assert not (tmp_path / "runs").exists(), "the check comes before any generation"


def test_output_under_a_file_and_the_same_path_twice(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="is not a directory"):
        Outputs(html=blocker / "sub" / "r.html").check()
    with pytest.raises(ConfigError, match="--json: the same file is also given to --html"):
        Outputs(html=tmp_path / "r.out", json=tmp_path / "r.out").check()
    Outputs(html=tmp_path / "new" / "deeper" / "r.html").check()  # a missing parent is created when writing


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere: no unwritable place to test")
def test_unwritable_place_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="not writable"):
            Outputs(junit=locked / "j.xml").check()
    finally:
        locked.chmod(0o700)


def test_one_failing_output_does_not_stop_the_others(tmp_path: Path) -> None:
    report = make_report()
    html = tmp_path / "taken"
    html.mkdir()  # became a directory after the check: the write fails
    outputs = Outputs(html=html, junit=tmp_path / "j.xml", markdown=tmp_path / "s.md", json=tmp_path / "r.json")
    failures = outputs.write(report, speed_table(report), 1.0, lambda _: None)
    assert len(failures) == 1 and failures[0].startswith(f"{html}: HTML report not written")
    assert json.loads((tmp_path / "r.json").read_text())["status"] == report.status
    assert (tmp_path / "j.xml").read_text().startswith("<?xml") and (tmp_path / "s.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.xml", "r.json", "s.md", "taken"], "no temp file left"
    assert list(html.iterdir()) == []


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")

    with pytest.raises(TypeError):
        write_atomic(target, 42)  # type: ignore[arg-type]  # fails mid-write
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
    write_atomic(target, "new \u2028 text")
    assert target.read_text(encoding="utf-8") == "new \u2028 text"
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask, "as readable as any file the user writes"


def test_json_output_has_no_nan(tmp_path: Path) -> None:
    report = make_report()
    Outputs(json=tmp_path / "r.json").write(report, speed_table(report), 1.0, lambda _: None)
    json.loads((tmp_path / "r.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


def test_a_command_ending_in_typer_exit_is_said_with_its_code(tmp_path: Path) -> None:
    """typer's Exit is the exit a command raises (typer >= 0.2x carries its own click, so it is not
    click's): its code is the exit code, not an "internal error" with exit 3."""
    import typer

    from evalrun.cli_app import failure_of

    assert failure_of(typer.Exit(4)) == ("evalrun exited with code 4 before writing a verdict", 4)
    js = tmp_path / "r.json"
    outputs = Outputs(json=js)
    outputs.claim()

    def ends(code: int) -> int:
        raise typer.Exit(code)

    with pytest.raises(typer.Exit):
        outputs.guarded(lambda: ends(1))()
    written = json.loads(js.read_text())
    assert (written["error"], written["exit_code"]) == ("evalrun exited with code 1 before writing a verdict", 1)
