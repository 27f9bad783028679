"""An Inspect `.eval` is read entry by entry, each entry bounded (issue 43): a sample that inflates
to 400 MB from a few hundred KB is exit 2 naming the file and the entry, in bounded time and memory;
a sample whose scorer left no pass/fail value has an unknown outcome (a gap at baseline)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from evalrun.evals.imports import read_logs
from tests.conftest import ROOT

pytest.importorskip("inspect_ai.log")

[REAL] = sorted((ROOT / "tests" / "data" / "inspect" / "float32").glob("*.eval"))
VICTIM = "samples/5_epoch_1.json"

# runs the CLI in a fresh process and prints its exit code and peak RSS (MB) beside its RSS once loaded
_CHILD = """
import sys
from evalrun.evals.imports import import_runs
import inspect_ai.log
from evalrun.cli import main
rss = lambda: int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024  # own peak (ru_maxrss keeps the parent's across exec)
loaded = rss()
sys.argv = ["evalrun", *sys.argv[1:]]
try:
    main()
    code = 0
except SystemExit as exc:
    code = exc.code
print("RESULT", code, loaded, rss())
"""


def _rewrite(dst: Path, name: str, write) -> Path:  # type: ignore[no-untyped-def]
    """A copy of the real log whose entry `name` is written by `write(stream)` instead."""
    with zipfile.ZipFile(REAL) as src, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for info in src.infolist():
            if info.filename == name:
                with out.open(name, "w", force_zip64=True) as fh:
                    write(fh)
            else:
                out.writestr(info.filename, src.read(info))
    return dst


def test_a_sample_that_inflates_to_400_mb_is_exit_2_in_bounded_memory(tmp_path: Path) -> None:
    sample = json.loads(zipfile.ZipFile(REAL).read(VICTIM))
    head, tail = json.dumps({**sample, "input": "@"}).split('"@"')

    def bomb(fh) -> None:  # type: ignore[no-untyped-def]
        fh.write(head.encode() + b'"')
        chunk = b"A" * (1 << 20)
        for _ in range(400):
            fh.write(chunk)
        fh.write(b'"' + tail.encode())

    path = _rewrite(tmp_path / "bomb.eval", VICTIM, bomb)
    assert path.stat().st_size < 1_000_000
    res = subprocess.run([sys.executable, "-c", _CHILD, "import", "inspect", str(path), "--name", "bomb",
                          "--out", str(tmp_path / "runs")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    code, loaded, peak = res.stdout.split("RESULT")[-1].split()
    assert code == "2", res.stdout + res.stderr
    assert f"{path}" in res.stderr.replace("\n", "") and VICTIM in res.stderr and "Traceback" not in res.stderr
    assert float(peak) - float(loaded) < 150, (loaded, peak)  # MB past the loaded interpreter
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_sample_without_its_scorers_value_is_an_unknown_outcome(tmp_path: Path) -> None:
    sample = json.loads(zipfile.ZipFile(REAL).read(VICTIM))
    path = _rewrite(tmp_path / "unscored.eval", VICTIM,
                    lambda fh: fh.write(json.dumps({**sample, "scores": {}}).encode()))
    run = read_logs("inspect", [path])
    errors = {g.item_id: g.error for g in run.generations if g.error is not None}
    assert list(errors) == [f"arith/{sample['id']}"] and "match" in errors[f"arith/{sample['id']}"]


def test_a_log_that_never_wrote_its_header_or_holds_a_torn_sample_is_refused(tmp_path: Path) -> None:
    from evalrun.evals.files import ConfigError

    unfinished = tmp_path / "unfinished.eval"
    with zipfile.ZipFile(REAL) as src, zipfile.ZipFile(unfinished, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            if info.filename != "header.json":  # what a killed eval leaves: the journal and samples
                out.writestr(info.filename, src.read(info))
    with pytest.raises(ConfigError, match="did not finish \\(status 'started'\\)"):
        read_logs("inspect", [unfinished])
    torn = _rewrite(tmp_path / "torn.eval", VICTIM, lambda fh: fh.write(b'{"id": 5, "epoch": 1, "inp'))
    with pytest.raises(ConfigError, match=f"torn.eval: {VICTIM}: not a readable Inspect log entry"):
        read_logs("inspect", [torn])
