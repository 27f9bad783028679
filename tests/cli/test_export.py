"""`evalrun export`: stored runs to Parquet and CSV as a user runs it (a subprocess), the
same tables as the Python API; usage errors and unreadable runs exit 2 naming the file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import pyarrow.parquet as pq

import evalrun
from evalrun.evals.frames import FIELD_COLUMNS, read_csv
from tests.conftest import make_report, run_cli, write_runs


@pytest.mark.slow
def test_export_writes_parquet_and_csv_equal_to_the_api(tmp_path: Path) -> None:
    dirs = write_runs(tmp_path / "runs", make_report())
    out = tmp_path / "out"
    res = run_cli("export", *map(str, dirs), "--baseline", str(dirs[0]), "--parquet", str(out / "f.parquet"),
                  "--csv", str(out / "f.csv"))
    assert res.returncode == 0, res.stderr
    assert "fields table" in res.stdout and "f.parquet" in res.stdout
    expected = evalrun.fields_df(dirs, baseline=dirs[0], log=None)
    back = pq.read_table(out / "f.parquet").to_pandas()
    assert list(back.columns) == list(FIELD_COLUMNS) and back.equals(expected)
    assert read_csv(out / "f.csv").equals(expected.replace({"": pd.NA}))
    assert (back.flip == "harmful").sum() == len(make_report().comparisons[0].harmful)
    res = run_cli("export", str(dirs[1]), "--table", "samples", "--parquet", str(out / "s.parquet"))
    assert res.returncode == 0, res.stderr
    assert pq.read_table(out / "s.parquet").to_pandas().equals(evalrun.samples_df(dirs[1:2], log=None))


@pytest.mark.slow
def test_export_usage_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    dirs = write_runs(tmp_path / "runs", make_report())
    res = run_cli("export", str(dirs[0]))
    assert res.returncode == 2 and "give --parquet PATH or --csv PATH" in res.stderr
    missing = tmp_path / "no-such-run"
    res = run_cli("export", str(dirs[0]), str(missing), "--csv", str(tmp_path / "x.csv"))
    assert res.returncode == 2 and f"{missing}: not a run directory" in res.stderr.replace("\n", "")
    assert "Traceback" not in res.stderr and not (tmp_path / "x.csv").exists()
    res = run_cli("export", str(dirs[0]), "--parquet", str(dirs[0] / "t.parquet"))
    assert res.returncode == 2 and "inside a run directory" in res.stderr and not (dirs[0] / "t.parquet").exists()
    res = run_cli("export", str(dirs[0]), "--table", "rows", "--csv", str(tmp_path / "x.csv"))
    assert res.returncode == 2 and "--table" in res.stderr


@pytest.mark.slow
def test_export_help_explains_the_tables_and_formats() -> None:
    res = run_cli("export", "--help")
    assert res.returncode == 0
    for word in ("--parquet", "--csv", "--table", "--baseline", "samples", "fields", "flip"):
        assert word in res.stdout
    assert "export" in run_cli("--help").stdout
