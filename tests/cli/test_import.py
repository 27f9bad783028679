"""`evalrun import` and `evalrun report --baseline/--candidate` as a user runs them (a subprocess),
on the real lm-eval logs in tests/data/lmeval: the paired verdict, its exit code and the HTML;
a torn log is exit 2 naming the file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

DATA = ROOT / "tests" / "data" / "lmeval"


def _import(tmp_path: Path, dtype: str, name: str, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli("import", "lm-eval", str(DATA / dtype), "--name", name, "--out", str(tmp_path / "runs"), *extra)


@pytest.mark.slow
def test_two_lm_eval_logs_give_the_paired_verdict_its_exit_code_and_the_html(tmp_path: Path) -> None:
    res = _import(tmp_path, "float32", "fp32")
    assert res.returncode == 0, res.stderr
    assert "fp32: imported: 240 items; run: " in res.stdout
    [run_dir] = (tmp_path / "runs").glob("fp32-*")
    again = _import(tmp_path, "float32", "fp32")
    assert again.returncode == 0 and "already stored" in again.stdout and str(run_dir) in again.stdout
    assert _import(tmp_path, "bfloat16", "bf16").returncode == 0
    html = tmp_path / "report.html"
    res = run_cli("report", "--baseline", "fp32", "--candidate", "bf16", "--out", str(tmp_path / "runs"),
                  "--html", str(html), "--json", str(tmp_path / "report.json"))
    verdict = json.loads((tmp_path / "report.json").read_text())
    status = verdict["status"]
    assert res.returncode == {"pass": 0, "fail": 1}[status], res.stderr
    assert "bf16 vs fp32" in res.stdout and "arith" in res.stdout
    page = html.read_text()
    assert "arith" in page and "exact_match,strip" in page and "<script>alert" not in page
    # the same comparison, the runs given as directories (positional, as before)
    res2 = run_cli("report", str(run_dir), *map(str, (tmp_path / "runs").glob("bf16-*")))
    assert res2.returncode == res.returncode


@pytest.mark.slow
def test_a_torn_log_exits_2_naming_the_file_and_line(tmp_path: Path) -> None:
    src = next((DATA / "float32").rglob("samples_arith_*.jsonl"))
    torn = tmp_path / "torn" / src.name
    torn.parent.mkdir()
    torn.write_bytes(src.read_bytes()[:-25])
    res = run_cli("import", "lm-eval", str(torn), "--name", "x", "--out", str(tmp_path / "runs"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{torn}:240: torn last line" in res.stderr.replace("\n", "")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.slow
def test_import_usage_errors_exit_2(tmp_path: Path) -> None:
    res = run_cli("import", "lm-eval", str(DATA / "float32"), "--name", "../x", "--out", str(tmp_path))
    assert res.returncode == 2 and "--name" in res.stderr
    res = run_cli("import", "lm-eval", str(DATA / "float32"), "--name", "x", "--field", "arith=money")
    assert res.returncode == 2 and "TASK=KIND" in res.stderr
    res = run_cli("report", "--baseline", "nothing", "--candidate", "else", "--out", str(tmp_path))
    assert res.returncode == 2 and "no run directory and no stored run named 'nothing'" in res.stderr
    res = run_cli("report", "--baseline", "nothing")
    assert res.returncode == 2 and "at least one candidate" in res.stderr


@pytest.mark.slow
def test_inspect_import_without_inspect_ai_or_of_a_foreign_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "x.eval"
    bad.write_text("not a log")
    res = run_cli("import", "inspect", str(bad), "--name", "x", "--out", str(tmp_path / "runs"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert str(bad) in res.stderr.replace("\n", "")
    assert "inspect-ai" in res.stderr or "not a readable Inspect eval log" in res.stderr
    shutil.rmtree(tmp_path / "runs", ignore_errors=True)
