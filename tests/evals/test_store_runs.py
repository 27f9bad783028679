"""Damaged run directories on real (tiny-model) runs: resume generates only what the damage
lost, documents with line separators go through every command, edited items and a lost or
unreadable manifest are handled the way the run store promises."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from evalrun.evals.files import ConfigError
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from tests.conftest import run_cli, tiny_config

WIDE = {"COLUMNS": "2000"}  # one warning per terminal line, whatever the tmp path's length


def _line_hashes(path: Path) -> list[str]:
    """sha256 of every readable line, in file order."""
    out = []
    for raw in path.read_bytes().split(b"\n"):
        try:
            json.loads(raw)["item_id"]
        except (ValueError, KeyError, TypeError):
            continue
        out.append(hashlib.sha256(raw).hexdigest())
    return out


def _ids(path: Path) -> list[str]:
    return [json.loads(raw)["item_id"] for raw in path.read_bytes().split(b"\n") if raw.startswith(b"{")
            and raw.endswith(b"}")]


def _damage_line(samples: Path, index: int, bad: bytes) -> tuple[bytes, list[str], str]:
    """Replace one line; returns the damaged bytes, the hashes of the valid lines, the lost item's id."""
    lines = samples.read_bytes().split(b"\n")
    lost = json.loads(lines[index])["item_id"]
    lines[index] = bad
    samples.write_bytes(b"\n".join(lines))
    return samples.read_bytes(), _line_hashes(samples), lost


@pytest.mark.slow
def test_cli_resume_after_a_torn_line_mid_file_regenerates_only_that_item(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config(tiny_model_dir)))
    out = tmp_path / "runs"
    first = run_cli("run", str(cfg), "--out", str(out), env=WIDE)
    assert first.returncode == 0, first.stderr
    (samples,) = out.glob("tiny-*/samples.jsonl")
    assert len(_line_hashes(samples)) == 6
    damaged, hashes, lost = _damage_line(samples, 2, b'{"item_id": "needle_numbers/L1')

    again = run_cli("run", str(cfg), "--out", str(out), env=WIDE)
    assert again.returncode == 0, again.stderr
    assert f"{samples}:3: unreadable line skipped" in again.stderr
    assert "1 generated" in again.stdout and "resuming" in again.stderr
    after = samples.read_bytes()
    assert after.startswith(damaged), "stored lines stay byte for byte where they were"
    assert _line_hashes(samples)[:5] == hashes and len(_line_hashes(samples)) == 6
    assert _ids(samples)[-1] == lost and sorted(set(_ids(samples))) == sorted(_ids(samples))


@pytest.mark.parametrize("bad", [b"\x00" * 64, b"]]] not json {{{"], ids=["nul", "garbage"])
@pytest.mark.slow
def test_resume_after_a_bad_line_mid_file(tiny_model_dir: Path, tmp_path: Path, bad: bytes) -> None:
    cfg = parse_config(tiny_config(tiny_model_dir), file=tmp_path / "cfg.yaml")
    first = execute(prepare(cfg, tmp_path), log=lambda _m: None)
    samples = first.dir / "samples.jsonl"
    damaged, hashes, lost = _damage_line(samples, 4, bad)
    seen: list[str] = []
    second = execute(prepare(cfg, tmp_path), log=seen.append)
    assert second.generated == 1 and set(second.generations) == set(first.generations)
    assert any(f"{samples}:5: unreadable line skipped" in m for m in seen), seen
    assert second.warnings and samples.read_bytes().startswith(damaged)
    assert _line_hashes(samples)[:5] == hashes and _ids(samples)[-1] == lost
    assert [s["generated"] for s in second.manifest["sessions"]] == [6, 1]


DOCS = [
    {"doc": "Invoice A.\u2028Total due:\u2029EUR 12.50.\u0085Thanks\x00.", "total": "EUR 12.50"},
    {"doc": "Invoice B.\u2028\u2028Total due: EUR 99.00.\r\x0c\x1c\x1e end", "total": "EUR 99.00"},
    {"doc": "Invoice C. Total due: EUR 7.00.\u0085", "total": "EUR 7.00"},
]


@pytest.mark.slow
def test_line_separators_in_documents_go_through_run_rescore_compare_and_report(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in DOCS), encoding="utf-8")
    assert "\u2028".encode() in data.read_bytes()
    task = {"pack": "files", "path": str(data), "prompt": "{doc}\nWhat is the total?", "fields": {"total": "amount"}}
    base, cand = tmp_path / "base.yaml", tmp_path / "cand.yaml"
    base.write_text(yaml.safe_dump(tiny_config(tiny_model_dir, name="sepbase", tasks=[task])))
    cand.write_text(yaml.safe_dump(tiny_config(tiny_model_dir, name="sepcand", batch_size=1, tasks=[task])))
    out = tmp_path / "runs"

    ran = run_cli("run", str(base), "--out", str(out))
    assert ran.returncode == 0, ran.stderr
    (base_dir,) = out.glob("sepbase-*")
    for name in ("items.jsonl", "samples.jsonl"):
        raw = (base_dir / name).read_bytes()
        assert raw.isascii() and raw.count(b"\n") == 3, name
    prompts = [json.loads(line)["prompt"] for line in (base_dir / "items.jsonl").read_bytes().split(b"\n") if line]
    assert prompts[0].startswith(DOCS[0]["doc"])

    rescored = run_cli("rescore", str(base_dir))
    assert rescored.returncode == 0, rescored.stderr
    assert (base_dir / "scores.jsonl").read_bytes().count(b"\n") == 3

    compared = run_cli("compare", str(base), str(cand), "--out", str(out))
    assert compared.returncode in (0, 1, 4), compared.stderr
    assert "reusing stored run" in compared.stderr
    (cand_dir,) = out.glob("sepcand-*")

    html = tmp_path / "x.html"
    reported = run_cli("report", str(base_dir), str(cand_dir), "--html", str(html))
    assert reported.returncode in (0, 1, 4), reported.stderr
    assert html.exists() and "warning" not in reported.stderr


@pytest.fixture
def stored_runs(tiny_model_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A baseline and a candidate run of the tiny model, stored as `evalrun` stores them."""
    dirs = []
    for name, batch in (("ebase", 4), ("ecand", 1)):
        cfg = parse_config(tiny_config(tiny_model_dir, name=name, batch_size=batch), file=tmp_path / f"{name}.yaml")
        dirs.append(execute(prepare(cfg, tmp_path / "runs"), log=lambda _m: None).dir)
    return dirs[0], dirs[1]


def _edit_gold(items: Path) -> None:
    lines = items.read_bytes().split(b"\n")
    row = json.loads(lines[1])
    row["fields"][0]["gold"] = "123"
    lines[1] = json.dumps(row).encode()
    items.write_bytes(b"\n".join(lines))


@pytest.mark.slow
def test_edited_items_are_refused_by_rescore_and_report_unless_trusted(stored_runs: tuple[Path, Path],
                                                                      tmp_path: Path) -> None:
    base, cand = stored_runs
    items = base / "items.jsonl"
    _edit_gold(items)
    html = tmp_path / "r.html"
    for args in (("rescore", str(base)), ("report", str(base), str(cand), "--html", str(html))):
        refused = run_cli(*args, env=WIDE)
        assert refused.returncode == 2, (args, refused.stderr)
        assert str(items) in refused.stderr and "changed after the run" in refused.stderr
        assert "--trust-edited-items" in refused.stderr
        trusted = run_cli(*args, "--trust-edited-items", env=WIDE)
        assert trusted.returncode in (0, 1, 4), (args, trusted.stderr)
        assert "warning:" in trusted.stderr and str(items) in trusted.stderr
    assert html.exists()


@pytest.mark.slow
def test_garbage_manifest_is_refused_by_rescore(stored_runs: tuple[Path, Path]) -> None:
    base, _ = stored_runs
    (base / "manifest.json").write_text("{ this is not json")
    refused = run_cli("rescore", str(base), env=WIDE)
    assert refused.returncode == 2 and f"{base / 'manifest.json'}" in refused.stderr, refused.stderr
    assert run_cli("rescore", str(base), "--trust-edited-items").returncode == 0


@pytest.mark.parametrize("damage", ["deleted", "garbage"])
@pytest.mark.slow
def test_execute_recreates_a_lost_manifest_and_reuses_the_samples(tiny_model_dir: Path, tmp_path: Path,
                                                                  damage: str) -> None:
    cfg = parse_config(tiny_config(tiny_model_dir), file=tmp_path / "cfg.yaml")
    first = execute(prepare(cfg, tmp_path), log=lambda _m: None)
    manifest, samples = first.dir / "manifest.json", first.dir / "samples.jsonl"
    before = samples.read_bytes()
    if damage == "deleted":
        manifest.unlink()
    else:
        manifest.write_text("garbage{")
    seen: list[str] = []
    second = execute(prepare(cfg, tmp_path), log=seen.append)
    assert second.reused and second.generated == 0 and samples.read_bytes() == before
    assert any("manifest recreated" in m for m in seen), seen
    stored = json.loads(manifest.read_text())
    assert stored["manifest_recreated"]["reason"] and stored["key"] == first.manifest["key"]
    assert stored["items_sha256"] == first.manifest["items_sha256"] and stored["status"] == "complete"
    if damage == "garbage":
        (kept,) = first.dir.glob("manifest.json.unreadable-*")
        assert kept.read_text() == "garbage{"


@pytest.mark.slow
def test_execute_refuses_items_edited_after_the_run(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = parse_config(tiny_config(tiny_model_dir), file=tmp_path / "cfg.yaml")
    first = execute(prepare(cfg, tmp_path), log=lambda _m: None)
    _edit_gold(first.dir / "items.jsonl")
    with pytest.raises(ConfigError, match="differs from the item the config builds") as info:
        execute(prepare(cfg, tmp_path), log=lambda _m: None)
    assert str(first.dir / "items.jsonl") in str(info.value) and "fields" in str(info.value)
