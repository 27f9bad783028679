"""`evalrun report --baseline NAME`: a bare NAME that is both a folder where the command runs and a run
stored under --out as NAME-<key12>/ is resolved one way, said in one line (which was taken, and how to
name the other); a folder holding no run does not hide the stored run of that name."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import make_report, run_cli, write_runs


def _store(tmp_path: Path) -> dict[str, Path]:
    """The baseline and a candidate stored under runs/ as `evalrun` names them (NAME-<key12>/)."""
    base, cand, _sparse = write_runs(tmp_path / "raw", make_report(hostile=False))
    (tmp_path / "runs").mkdir()
    return {"baseline": base.rename(tmp_path / "runs" / "baseline-0123456789ab"),
            "int4kv": cand.rename(tmp_path / "runs" / "int4kv-0123456789ab")}


def test_a_name_that_is_a_run_folder_and_a_stored_run_says_which_was_taken(tmp_path: Path) -> None:
    stored = _store(tmp_path)
    shutil.copytree(stored["baseline"], tmp_path / "baseline")  # a run folder here, named as the stored run
    res = run_cli("report", "--baseline", "baseline", "--candidate", "int4kv", "--out", "runs", cwd=tmp_path)
    assert res.returncode in (0, 1, 4), res.stderr
    said = " ".join(res.stderr.split())
    assert ("baseline: taking the run in the folder ./baseline, not the stored run of that name "
            f"({Path('runs') / stored['baseline'].name}): give its path to take it") in said
    assert "int4kv: taking" not in said  # a name that is only a stored run needs no word


def test_a_folder_holding_no_run_does_not_hide_the_stored_run(tmp_path: Path) -> None:
    stored = _store(tmp_path)
    (tmp_path / "baseline").mkdir()  # e.g. the lm-eval output the run was imported from
    (tmp_path / "baseline" / "results.json").write_text("{}")
    res = run_cli("report", "--baseline", "baseline", "--candidate", "int4kv", "--out", "runs", cwd=tmp_path)
    assert res.returncode in (0, 1, 4), res.stderr
    said = " ".join(res.stderr.split())
    assert (f"baseline: taking the stored run {Path('runs') / stored['baseline'].name}: the folder ./baseline "
            "holds no run (no manifest.json)") in said
    assert "int4kv vs baseline" in " ".join(res.stdout.split())
