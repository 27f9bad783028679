"""What an imported log cannot vouch for (issue 43): a doc whose pass/fail metric lm-eval logged
as NaN or left out has an unknown outcome, which is a gap (exit 4) as a baseline that raised is,
never "wrong at baseline" (which would hide the candidate's losses there); and one doc id logged
as both 2 and "2" is refused at import, naming both lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalrun.evals.files import ConfigError
from evalrun.evals.imports import read_logs
from tests.conftest import ROOT, run_cli

DATA = ROOT / "tests" / "data" / "lmeval"
LOST = 30  # docs fp32 answers right that the candidate gets wrong: enough for the gate to FAIL


def _folder(tmp_path: Path, name: str, edit) -> Path:  # type: ignore[no-untyped-def]
    """A copy of the real fp32 log folder whose sample lines went through `edit(rows)`."""
    [src] = sorted((DATA / "float32").rglob("samples_arith_*.jsonl"))
    dst = tmp_path / name
    shutil.copytree(src.parent, dst)
    path = dst / src.name
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edit(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # NaN as json writes it, as lm-eval does
    return dst


def _right(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["exact_match"] == 1.0][:LOST]


def _lose(rows: list[dict]) -> None:
    for r in _right(rows):
        r["exact_match"], r["resps"], r["filtered_resps"] = 0.0, [[" 0"]], ["0"]


def _nan(rows: list[dict]) -> None:
    for r in _right(rows):
        r["exact_match"] = float("nan")


def _absent(rows: list[dict]) -> None:
    for r in _right(rows):
        del r["exact_match"]


def _report(tmp_path: Path, base: Path, cand: Path):  # type: ignore[no-untyped-def]
    out = tmp_path / "runs"
    for folder, name in ((base, "base"), (cand, "cand")):
        res = run_cli("import", "lm-eval", str(folder), "--name", name, "--out", str(out))
        assert res.returncode == 0, res.stderr
    return run_cli("report", "--baseline", "base", "--candidate", "cand", "--out", str(out))


def test_the_control_without_unknown_outcomes_fails_on_the_candidates_losses(tmp_path: Path) -> None:
    res = _report(tmp_path, _folder(tmp_path, "base", lambda rows: None), _folder(tmp_path, "cand", _lose))
    assert res.returncode == 1, res.stdout + res.stderr


@pytest.mark.parametrize("unknown", [_nan, _absent], ids=["nan", "absent"])
def test_an_unknown_baseline_outcome_is_a_gap_not_wrong_at_baseline(tmp_path: Path, unknown) -> None:  # type: ignore[no-untyped-def]
    res = _report(tmp_path, _folder(tmp_path, "base", unknown), _folder(tmp_path, "cand", _lose))
    assert res.returncode == 4, res.stdout + res.stderr
    assert f"raised on {LOST}" in res.stdout + res.stderr
    run = read_logs("lm-eval", [_folder(tmp_path, "again", unknown)])
    unknown_gens = [g for g in run.generations if g.error is not None]
    assert len(unknown_gens) == LOST
    assert "exact_match,strip" in (unknown_gens[0].error or "") and unknown_gens[0].output is not None


def test_a_doc_id_logged_as_a_number_and_as_a_string_is_refused_naming_both(tmp_path: Path) -> None:
    def twice(rows: list[dict]) -> None:
        rows[7]["doc_id"] = str(rows[2]["doc_id"])  # "2" beside 2: one item id arith/2

    folder = _folder(tmp_path, "dup", twice)
    path = next(folder.glob("samples_*.jsonl"))
    with pytest.raises(ConfigError, match=rf"{path.name}:8: doc_id '2' of task 'arith' and doc_id 2 at "
                                          rf".*{path.name}:3 are one item \(arith/2\)"):
        read_logs("lm-eval", [folder])
