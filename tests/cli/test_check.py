"""`evalrun check`: the dry run validates everything `compare` would, builds the items with the
tokenizer alone, and says what is stored and how long the rest should take, measured from
stored runs of the same model on the same device."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from statistics import median

import pytest
import yaml

from evalrun.evals import api
from tests.conftest import BASE_CONFIG, run_cli, tiny_config


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> dict[str, Path]:
    """One real run of the tiny model (six needle items), stored with `evalrun run`."""
    root = tmp_path_factory.mktemp("check")
    cfg = root / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config(tiny_model_dir)))
    res = run_cli("run", str(cfg), "--out", str(root / "runs"))
    assert res.returncode == 0, res.stdout + res.stderr
    (run_dir,) = (root / "runs").iterdir()
    longer = root / "tiny16.yaml"  # same model and device, another key: measured from the run above
    longer.write_text(yaml.safe_dump(tiny_config(tiny_model_dir, name="tiny16", generation={"max_new_tokens": 16})))
    (root / "run.stderr").write_text(res.stderr)
    return {"cfg": cfg, "runs": root / "runs", "run_dir": run_dir, "tiny16": longer, "stderr": root / "run.stderr"}


@pytest.mark.slow
def test_valid_config_prints_the_figures_and_exits_0(tmp_path: Path, cfg_file, smol_dir: str) -> None:
    from transformers import AutoTokenizer

    cfg = cfg_file("base.yaml", BASE_CONFIG)
    res = run_cli("check", str(cfg), "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stdout + res.stderr
    out = _flat(res.stdout)
    # the figures, computed here from the tokenizer on its own: the prompt as the model reads it
    tok = AutoTokenizer.from_pretrained(smol_dir)
    items = api.export_pack("needle_numbers", {"lengths": [512], "depths": [0.5]})
    counts = sorted(len(tok(tok.apply_chat_template([{"role": "user", "content": it.prompt}], tokenize=False,
                                                    add_generation_prompt=True), add_special_tokens=False)["input_ids"])
                    for it in items)
    assert f"{counts[0]} / {median(counts):g} / {counts[-1]} (of {8192 - 48})" in out, out
    assert "context 8192 tokens: prompts up to 8144 beside max_new_tokens 48" in out
    assert f"needle_numbers │ {len(items)} │" in out
    kinds = {f.kind for it in items for f in it.fields}
    assert kinds == {"amount", "number"} and "amount 1, number 1" in out
    assert f"{tmp_path / 'runs'}/base-" in out and "stored run: none" in out
    assert "estimated generation time: unknown (no stored run to measure from)" in out
    assert f"check: 1 config valid (gates and data included); {len(items)} items built without loading weights in" in out
    assert not (tmp_path / "runs").exists(), "a dry run writes nothing"


@pytest.mark.slow
def test_no_weights_are_loaded(tmp_path: Path, cfg_file, monkeypatch: pytest.MonkeyPatch) -> None:
    import evalrun.runners.hf.runner as hf

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("check loaded model weights")

    monkeypatch.setattr(hf, "load_model", refuse)
    (result,) = api.check([cfg_file("base.yaml", BASE_CONFIG)], out=tmp_path / "runs")
    assert result.prepared.runner.model is None
    assert result.items == 2 and result.context == 8192 and result.stored.state == "none"
    assert [p.pack for p in result.packs] == ["needle_numbers"] and result.packs[0].fields == {"amount": 1, "number": 1}
    assert not result.estimate.known


GATE_TYPO = "packs: {needle_numbrs: {max_drop: 0}}\n"


@pytest.mark.slow
def test_a_bad_gate_file_key_is_exit_2_naming_file_and_key(tmp_path: Path, cfg_file) -> None:
    cfg = cfg_file("base.yaml", BASE_CONFIG)
    gate = tmp_path / "gate.yaml"
    gate.write_text(GATE_TYPO)
    res = run_cli("check", str(cfg), "--gate", str(gate), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{gate}: packs.needle_numbrs: unknown pack 'needle_numbrs'" in _flat(res.stderr)
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_a_bad_gate_field_in_a_config_is_exit_2_naming_the_config(tmp_path: Path, cfg_file) -> None:
    cfg = cfg_file("cand.yaml", BASE_CONFIG + "gate: {max_harmful_flips: {nubmer: 0}}\n")
    res = run_cli("check", str(cfg), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stdout + res.stderr
    flat = _flat(res.stderr)
    assert f"{cfg}: gate.max_harmful_flips.nubmer" in flat and "did you mean 'number'" in flat, flat


@pytest.mark.slow
def test_a_missing_data_file_is_exit_2_naming_file_and_key(tmp_path: Path, cfg_file) -> None:
    cfg = cfg_file("files.yaml", """
        name: files
        model: smollm2-135m
        tasks:
          - pack: files
            path: missing.csv
            fields: {total: amount}
            prompt: "{doc} What is the total?"
        """)
    res = run_cli("check", str(cfg), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{cfg}: tasks[0].path: file not found: {tmp_path / 'missing.csv'}" in _flat(res.stderr)


@pytest.mark.slow
def test_a_bad_pack_param_is_exit_2_naming_file_and_key(tmp_path: Path, cfg_file) -> None:
    good = cfg_file("good.yaml", BASE_CONFIG)
    bad = cfg_file("bad.yaml", BASE_CONFIG.replace("lengths", "lenghts").replace("name: base", "name: bad"))
    res = run_cli("check", str(good), str(bad), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{bad}: tasks[0].lenghts: unknown key" in _flat(res.stderr)
    assert res.stdout == "", "every config is validated before any is reported"


@pytest.mark.slow
def test_help_explains_the_dry_run() -> None:
    res = run_cli("check", "--help")
    assert res.returncode == 0 and "without loading model weights" in _flat(res.stdout)
    listing = run_cli("--help")
    assert "check" in listing.stdout and "Dry run" in listing.stdout


@pytest.mark.slow
def test_a_complete_stored_run_is_reused_and_measures_itself(stored: dict[str, Path]) -> None:
    res = run_cli("check", str(stored["cfg"]), "--out", str(stored["runs"]))
    assert res.returncode == 0, res.stdout + res.stderr
    out = _flat(res.stdout)
    assert f"{stored['run_dir']} (key {stored['run_dir'].name.split('-')[1]}); stored run: complete (6 items" in out
    assert "none (the stored run is reused); generating it again (--fresh) ≈" in out
    assert f"measured by {stored['run_dir'].name} (6 items)" in out and "prefill" in out and "decode" in out
    # its own measurement rebuilds its own generation time (prefill and decode rates times its own tokens)
    (result,) = api.check([stored["cfg"]], out=stored["runs"])
    measured = json.loads((stored["run_dir"] / "manifest.json").read_text())["speed"]["generation_seconds"]
    assert result.estimate.all_seconds == pytest.approx(measured, rel=0.1)
    assert result.estimate.missing_seconds == 0


@pytest.mark.slow
def test_a_partial_run_counts_what_is_stored(stored: dict[str, Path], tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    partial = runs / stored["run_dir"].name
    shutil.copytree(stored["run_dir"], partial)
    lines = (partial / "samples.jsonl").read_text().splitlines(keepends=True)
    (partial / "samples.jsonl").write_text("".join(lines[:2]))
    res = run_cli("check", str(stored["cfg"]), "--out", str(runs))
    assert res.returncode == 0, res.stdout + res.stderr
    out = _flat(res.stdout)
    assert "stored run: 2 of 6 items stored" in out and "for the 4 items not stored (all 6:" in out


@pytest.mark.slow
def test_another_config_is_estimated_from_the_newest_run_of_its_model(stored: dict[str, Path],
                                                                       tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(stored["run_dir"], runs / stored["run_dir"].name)
    old = runs / "older-000000000000"  # the same model and device, recorded earlier and ten times slower
    shutil.copytree(stored["run_dir"], old)
    manifest = json.loads((old / "manifest.json").read_text())
    (old / "manifest.json").write_text(json.dumps(manifest | {"updated": "2000-01-01T00:00:00+00:00"}))
    slow = [json.loads(line) for line in (old / "samples.jsonl").read_text().splitlines()]
    (old / "samples.jsonl").write_text("".join(json.dumps(g | {k: g[k] * 10 for k in ("seconds", "prefill_seconds",
                                                                                        "decode_seconds")}) + "\n"
                                               for g in slow))
    res = run_cli("check", str(stored["tiny16"]), "--out", str(runs))
    assert res.returncode == 0, res.stdout + res.stderr
    out = _flat(res.stdout)
    assert "stored run: none" in out and f"measured by {stored['run_dir'].name} (6 items)" in out, out
    assert "≈" in out and "for 6 items" in out
    # twice the answer length allowed: a longer estimate than the run it was measured from
    (short,) = api.check([stored["cfg"]], out=runs)
    (longer,) = api.check([stored["tiny16"]], out=runs)
    assert longer.estimate.all_seconds > short.estimate.all_seconds


@pytest.mark.slow
def test_a_run_of_another_model_is_never_the_measure(stored: dict[str, Path], cfg_file) -> None:
    cfg = cfg_file("base.yaml", BASE_CONFIG)  # the default model, not the tiny one stored
    res = run_cli("check", str(cfg), "--out", str(stored["runs"]))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "estimated generation time: unknown (no stored run to measure from)" in _flat(res.stdout)


@pytest.mark.slow
def test_stored_items_that_differ_are_exit_2(stored: dict[str, Path], tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run_dir = runs / stored["run_dir"].name
    shutil.copytree(stored["run_dir"], run_dir)
    items = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    items[0]["fields"][0]["gold"] = "1"
    (run_dir / "items.jsonl").write_text("".join(json.dumps(it) + "\n" for it in items))
    res = run_cli("check", str(stored["cfg"]), "--out", str(runs))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{run_dir / 'items.jsonl'}: item {items[0]['id']!r} differs" in _flat(res.stderr)


@pytest.mark.slow
def test_run_prints_plain_progress_lines_outside_a_terminal(stored: dict[str, Path]) -> None:
    """The fixture's `evalrun run` wrote to a pipe, as in CI: lines, not a bar drawn at the end."""
    err = stored["stderr"].read_text()
    assert "tiny: started: 0/6 items, rate unknown (no item finished yet)" in err, err
    assert "tiny: finished: 6/6 items," in err and "ETA 0 s" in err


@pytest.mark.slow
def test_configs_are_placed_as_compare_places_them(tmp_path: Path, cfg_file) -> None:
    """A name given twice is a repeat stored beside the first (A/A); two configs sharing a name is an error."""
    cfg = cfg_file("base.yaml", BASE_CONFIG)
    first, again = api.check([cfg, cfg], out=tmp_path / "runs", limit=1)
    assert (first.label, again.label) == ("base", "base~r1")
    assert again.run_dir == first.run_dir.with_name(first.run_dir.name + "-r1") and first.key == again.key
    assert first.items == 1, "--limit reaches the packs"
    other = cfg_file("other.yaml", BASE_CONFIG.replace("[0.5]", "[0.0]"))
    for call in (lambda: api.check([cfg, other], out=tmp_path / "runs"),
                 lambda: api.compare(api.load(cfg), [api.load(other)], out=tmp_path / "runs")):
        with pytest.raises(api.ConfigError, match="two different configurations share the name 'base'"):
            call()  # told apart by their pack parameters alone
    assert not (tmp_path / "runs").exists()
