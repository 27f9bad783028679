"""A green must mean something: a stored baseline that is empty, deleted or
unreadable, and a gate with a typo, never give exit 0 — in any output format.

Real runs of the tiny model, stored with `evalrun run`, then damaged the way
disks and people damage them, and compared again with `evalrun report`."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from evalrun.evals.gate import NOTHING_COULD_FAIL
from evalrun.values.registry import typed_names
from tests.conftest import run_cli, tiny_config


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> dict[str, Path]:
    """A baseline and a candidate run of the tiny model (six needle items each)."""
    root = tmp_path_factory.mktemp("stored")
    paths = {}
    for name in ("base", "cand"):
        cfg = root / f"{name}.yaml"
        cfg.write_text(yaml.safe_dump(tiny_config(tiny_model_dir, name=name)))
        res = run_cli("run", str(cfg), "--out", str(root / "runs"))
        assert res.returncode == 0, res.stderr
        paths[name] = cfg
    for d in (root / "runs").iterdir():
        paths[d.name.split("-")[0] + "_dir"] = d
    return paths


def _copy_runs(stored: dict[str, Path], tmp: Path) -> tuple[Path, Path]:
    base, cand = tmp / "runs" / stored["base_dir"].name, tmp / "runs" / stored["cand_dir"].name
    shutil.copytree(stored["base_dir"], base)
    shutil.copytree(stored["cand_dir"], cand)
    return base, cand


def _all_formats(tmp: Path) -> list[str]:
    return ["--html", str(tmp / "out" / "r.html"), "--junit", str(tmp / "out" / "j.xml"),
            "--markdown", str(tmp / "out" / "s.md"), "--json", str(tmp / "out" / "r.json")]


def _assert_incomplete_everywhere(tmp: Path, res) -> None:  # type: ignore[no-untyped-def]
    assert res.returncode == 4, res.stdout + res.stderr
    assert "verdict: INCOMPLETE" in res.stdout
    out = tmp / "out"
    assert json.loads((out / "r.json").read_text())["status"] == "incomplete"
    root = ET.parse(out / "j.xml").getroot()
    assert int(root.get("errors")) >= 1
    assert root.find("testsuite/properties/property[@name='verdict']").get("value") == "INCOMPLETE"
    assert "INCOMPLETE" in (out / "s.md").read_text().splitlines()[0]
    assert 'id="verdict-text">verdict: INCOMPLETE<' in (out / "r.html").read_text()


def _garbage_first_line(samples: Path) -> None:
    samples.write_bytes(b"\x00\x00garbage{{\n" + samples.read_bytes().split(b"\n", 1)[1])


DAMAGE = {
    "empty": lambda p: p.write_bytes(b""),
    "deleted": lambda p: p.unlink(),
    "garbage_first_line": _garbage_first_line,
    "every_line_unreadable": lambda p: p.write_bytes(b"".join(b"not json\n" for _ in p.read_bytes().splitlines())),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.slow
def test_damaged_baseline_is_never_a_pass(stored: dict[str, Path], tmp_path: Path, damage: str) -> None:
    base, cand = _copy_runs(stored, tmp_path)
    DAMAGE[damage](base / "samples.jsonl")
    res = run_cli("report", str(base), str(cand), *_all_formats(tmp_path))
    _assert_incomplete_everywhere(tmp_path, res)
    assert str(base) in res.stdout.replace("\n", ""), "the gap names the run directory"


@pytest.mark.slow
def test_damaged_baseline_is_regenerated_by_compare(stored: dict[str, Path], tmp_path: Path) -> None:
    """`compare` owns its runs: a deleted baseline file is generated again, and the result is real."""
    base, _ = _copy_runs(stored, tmp_path)
    (base / "samples.jsonl").unlink()
    res = run_cli("compare", str(stored["base"]), str(stored["cand"]), "--out", str(tmp_path / "runs"))
    assert len((base / "samples.jsonl").read_text().splitlines()) == 6
    flat = " ".join(res.stdout.split())
    assert "items paired" not in flat, "every item was paired again: no gap in the data"
    # the random tiny model finds no needle, so no rule could fail: that, and only that, keeps it from a pass
    assert res.returncode == 4, res.stdout + res.stderr
    assert f"needle_numbers {NOTHING_COULD_FAIL}" in flat and "not testable here (baseline 0 of 6)" in flat


@pytest.mark.slow
def test_a_verdict_where_nothing_could_fail_is_never_a_pass(stored: dict[str, Path], tmp_path: Path) -> None:
    """The tiny model's baseline gets none of its needles right: a harmful-flip rule and a drop rule cannot
    fail there, so they are "not testable here" in every output and the verdict is exit 4, not a green."""
    base, cand = _copy_runs(stored, tmp_path)
    res = run_cli("report", str(base), str(cand), *_all_formats(tmp_path))
    _assert_incomplete_everywhere(tmp_path, res)
    out = tmp_path / "out"
    phrase = "0 of 2 rules passed, 2 not testable here, 1 gap(s) in the data"
    assert f"cand: INCOMPLETE ({phrase})" in " ".join(res.stdout.split())
    data = json.loads((out / "r.json").read_text())
    assert data["summary"] == phrase and [r["status"] for r in data["verdicts"][0]["rules"]] == ["untestable"] * 2
    root = ET.parse(out / "j.xml").getroot()
    assert [s.get("message") for s in root.iter("skipped")] == ["not testable here (baseline 0 of 6)"] * 2
    assert root.find("testsuite/properties/property[@name='summary']").get("value") == phrase
    assert phrase in (out / "s.md").read_text().splitlines()[0]
    assert phrase in (out / "r.html").read_text()


GATE_ERRORS = {
    "pack_typo": ("packs: {needle_numbrs: {max_drop: 0}}\n", "packs.needle_numbrs: unknown pack 'needle_numbrs' "
                  "(did you mean 'needle_numbers'?)"),
    "type_typo": ("max_harmful_flips: {amonut: 0}\n", "max_harmful_flips.amonut: 'amonut' is neither a field type"),
    # every typed field type has a harmful-flip limit by default: disable each one the registry knows
    "all_disabled": ("packs: {'*': {max_drop: null}}\nmax_harmful_flips: {"
                     + ", ".join(f"{name}: null" for name in typed_names()) + "}\n", "the gate has no rule left"),
    "empty_file": ("", "the gate file is empty"),
    "comment_only": ("# nothing here\n", "the gate file is empty"),
    "infinite": ("packs: {'*': {max_drop: .inf}}\n", "packs.*.max_drop"),
    "nan": ("packs: {'*': {non_inferiority: .nan}}\n", "packs.*.non_inferiority"),
}


@pytest.mark.parametrize("case", sorted(GATE_ERRORS))
@pytest.mark.slow
def test_bad_gate_file_is_exit_2_in_every_format(stored: dict[str, Path], tmp_path: Path, case: str) -> None:
    text, message = GATE_ERRORS[case]
    gate = tmp_path / "gate.yaml"
    gate.write_text(text)
    base, cand = _copy_runs(stored, tmp_path)
    res = run_cli("report", str(base), str(cand), "--gate", str(gate), *_all_formats(tmp_path))
    assert res.returncode == 2, res.stdout + res.stderr
    flat = " ".join(res.stderr.split())
    assert str(gate) in flat and message in flat, flat
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir()), "no output for a bad gate"


@pytest.mark.slow
def test_gate_typo_stops_compare_before_any_generation(stored: dict[str, Path], tmp_path: Path) -> None:
    gate = tmp_path / "gate.yaml"
    gate.write_text("packs: {needle_numbrs: {max_drop: 0}}\n")
    res = run_cli("compare", str(stored["base"]), str(stored["cand"]), "--out", str(tmp_path / "runs"),
                  "--gate", str(gate))
    assert res.returncode == 2 and "needle_numbrs" in res.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir()), "nothing was generated"


@pytest.mark.slow
def test_gate_typo_in_a_candidate_config_names_the_config(stored: dict[str, Path], tmp_path: Path) -> None:
    cand = yaml.safe_load(stored["cand"].read_text())
    cand["gate"] = {"max_harmful_flips": {"nubmer": 0}}
    path = tmp_path / "cand.yaml"
    path.write_text(yaml.safe_dump(cand))
    res = run_cli("compare", str(stored["base"]), str(path), "--out", str(tmp_path / "runs"))
    flat = " ".join(res.stderr.split())
    assert res.returncode == 2 and f"{path}: gate.max_harmful_flips.nubmer" in flat and "'number'" in flat, flat


@pytest.mark.slow
def test_empty_gate_in_a_config_is_an_error(stored: dict[str, Path], tmp_path: Path) -> None:
    path = tmp_path / "cand.yaml"
    path.write_text(stored["cand"].read_text() + "gate:\n")
    res = run_cli("run", str(path), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2 and f"{path}: gate: the gate is empty" in " ".join(res.stderr.split())
