"""`evalrun import lm-eval` on real lm-eval 0.4.13 sample logs (tests/data/lmeval, made by the
commands in its README): items, outcomes equal to lm-eval's own, the content key, the
paired comparison, and every way a log can be torn, truncated, foreign or edited."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import evalrun
from evalrun.evals import api
from evalrun.evals.files import ConfigError
from evalrun.evals.imports import FieldMap, import_runs, load_field_map, read_logs
from evalrun.evals.compare import PairingError
from evalrun.evals.scoring import outcome_of
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "lmeval"
METRIC = "exact_match,strip"


def _log(dtype: str) -> Path:
    [path] = sorted((DATA / dtype).rglob("samples_arith_*.jsonl"))
    return path


def _results(dtype: str) -> dict:
    [path] = sorted((DATA / dtype).rglob("results_*.json"))
    return json.loads(path.read_text())


def _copy(dtype: str, tmp_path: Path) -> Path:
    """A copy of one run's folder (samples and results), to damage."""
    src = _log(dtype).parent
    dst = tmp_path / dtype
    shutil.copytree(src, dst)
    return dst


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write_lines(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_real_log_becomes_one_item_per_doc_with_lm_evals_own_outcome(tmp_path: Path) -> None:
    [stored] = import_runs("lm-eval", [DATA / "float32"], name="fp32", out=tmp_path, log=lambda m: None)
    run = api.load_stored(stored.dir, log=None)
    assert len(run.items) == 240 and {it.pack for it in run.items} == {"arith"}
    item = run.items[0]
    assert item.id == "arith/0" and item.prompt.endswith("Question: What is 1 + 31?\nAnswer:")
    assert [f.name for f in item.fields] == [METRIC] and item.fields[0].gold == "32"
    scored = api.score(run)
    # lm-eval's own accuracy, from its results file, is the share of items the import scores correct
    assert sum(s.correct for s in scored) / len(scored) == pytest.approx(_results("float32")["results"]["arith"][METRIC])
    lines = {row["doc_id"]: row for row in _lines(_log("float32"))}
    for s in scored:
        assert s.correct == (lines[int(s.item_id.split("/")[1])]["exact_match"] == 1.0)
    manifest = run.manifest
    assert manifest.runner == "lm-eval" and manifest.dtype == "float32" and manifest.versions.lm_eval == "0.4.13"
    assert manifest["imported"]["source_results"]["arith"][METRIC] == _results("float32")["results"]["arith"][METRIC]
    assert manifest.packs[0].pack == "arith" and manifest.packs[0].params["num_fewshot"] == 3


def test_the_same_files_give_the_same_key_and_the_stored_run_is_reused(tmp_path: Path) -> None:
    [first] = import_runs("lm-eval", [DATA / "float32"], name="fp32", out=tmp_path / "a", log=lambda m: None)
    moved = _copy("float32", tmp_path)  # the same content elsewhere
    [again] = import_runs("lm-eval", [moved], name="fp32", out=tmp_path / "a", log=lambda m: None)
    assert again.dir == first.dir and again.reused and not first.reused
    [other] = import_runs("lm-eval", [DATA / "bfloat16"], name="fp32", out=tmp_path / "a", log=lambda m: None)
    assert other.key != first.key


def test_paired_comparison_of_fp32_and_bf16_counts_the_flips_lm_eval_logged(tmp_path: Path) -> None:
    base, cand = (import_runs("lm-eval", [DATA / d], name=d, out=tmp_path, log=lambda m: None)[0]
                  for d in ("float32", "bfloat16"))
    report = api.report([base.dir, cand.dir], log=lambda m: None)
    [pc] = report.comparisons[0].packs
    a = {r["doc_id"]: r["exact_match"] for r in _lines(_log("float32"))}
    b = {r["doc_id"]: r["exact_match"] for r in _lines(_log("bfloat16"))}
    assert pc.n == 240
    assert len(pc.harmful) == sum(1 for k in a if a[k] == 1.0 and b[k] == 0.0)
    assert len(pc.helpful) == sum(1 for k in a if a[k] == 0.0 and b[k] == 1.0)
    assert pc.baseline_accuracy == pytest.approx(_results("float32")["results"]["arith"][METRIC])
    assert pc.candidate_accuracy == pytest.approx(_results("bfloat16")["results"]["arith"][METRIC])
    assert report.verdicts[0].status in ("pass", "fail") and not report.verdicts[0].gaps


def test_samples_df_and_fields_df_read_imported_runs(tmp_path: Path) -> None:
    base, cand = (import_runs("lm-eval", [DATA / d], name=d, out=tmp_path, log=lambda m: None)[0]
                  for d in ("float32", "bfloat16"))
    samples = evalrun.samples_df([base.dir, cand.dir], log=None)
    assert len(samples) == 480 and set(samples.config) == {"float32", "bfloat16"}
    fields = evalrun.fields_df([base.dir, cand.dir], baseline=base.dir, log=None)
    harmful = fields[(fields.config == "bfloat16") & (fields.flip == "harmful")]
    assert len(harmful) == len(api.report([base.dir, cand.dir], log=lambda m: None).comparisons[0].packs[0].harmful)


def test_a_typed_field_mapping_scores_the_response_with_evalruns_scorer(tmp_path: Path) -> None:
    mapping = load_field_map(pairs=["arith=number"])
    [stored] = import_runs("lm-eval", [DATA / "float32"], name="typed", out=tmp_path, mapping=mapping,
                           log=lambda m: None)
    run = api.load_stored(stored.dir, log=None)
    assert [(f.name, f.kind) for f in run.items[0].fields] == [("answer", "number")]
    scored = api.score(run)
    lm_eval = {r["doc_id"]: r["exact_match"] for r in _lines(_log("float32"))}
    # a bare number answer is read the same by both; the typed scorer reads each answer as a number
    agree = sum(1 for s in scored if s.correct == (lm_eval[int(s.item_id.split("/")[1])] == 1.0))
    assert agree >= 0.95 * len(scored)
    first = scored[0].fields["answer"]
    assert (scored[0].output, first.outcome, first.gold_norm, first.pred_norm) == (" 4", "wrong_value", "32", "4")
    assert first.detail is None or "source metric" not in first.detail
    with pytest.raises(ConfigError, match="no task 'arth'"):
        read_logs("lm-eval", [DATA / "float32"], load_field_map(pairs=["arth=number"]))
    with pytest.raises(ConfigError, match="TASK=KIND"):
        load_field_map(pairs=["arith=money"])


def test_fields_file_maps_tasks(tmp_path: Path) -> None:
    path = tmp_path / "fields.yaml"
    path.write_text("fields:\n  arith: {type: number, name: result}\n")
    assert load_field_map(path).spec("arith").name == "result"
    path.write_text("fields:\n  arith: money\n")
    with pytest.raises(ConfigError, match=r"fields\.arith\.type"):
        load_field_map(path)


def test_fields_file_still_reads_kind_as_type(tmp_path: Path) -> None:
    path = tmp_path / "fields.yaml"
    path.write_text("fields:\n  arith: {kind: number, name: result}\n")
    spec = load_field_map(path).spec("arith")
    assert spec is not None and (spec.type, spec.name) == ("number", "result")
    path.write_text("fields:\n  arith: {kind: number, type: number}\n")
    with pytest.raises(ConfigError, match="older spelling"):
        load_field_map(path)


def test_a_torn_last_line_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    folder = _copy("float32", tmp_path)
    path = next(folder.glob("samples_*.jsonl"))
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 40])  # killed mid-write
    with pytest.raises(ConfigError, match=rf"{path.name}:240: torn last line"):
        read_logs("lm-eval", [folder])


def test_a_truncated_log_is_refused_against_its_results_file(tmp_path: Path) -> None:
    folder = _copy("float32", tmp_path)
    path = next(folder.glob("samples_*.jsonl"))
    _write_lines(path, _lines(path)[:200])
    with pytest.raises(ConfigError, match="holds 200 docs of task 'arith', but its results file says 240"):
        read_logs("lm-eval", [folder])


def test_a_foreign_file_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "samples_arith_2026-01-01T00-00-00.000000.jsonl"
    path.write_text('{"item_id": "a", "output": "x"}\n')  # an evalrun samples line, not lm-eval's
    with pytest.raises(ConfigError, match=rf"{path.name}:1: not an lm-eval sample \(no doc_id, arguments, resps\)"):
        read_logs("lm-eval", [path])
    path.write_text("not json\n")
    with pytest.raises(ConfigError, match=rf"{path.name}:1: not JSON"):
        read_logs("lm-eval", [path])
    other = tmp_path / "results.jsonl"
    other.write_text("{}\n")
    with pytest.raises(ConfigError, match="not an lm-eval sample log name"):
        read_logs("lm-eval", [other])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no lm-eval sample logs"):
        read_logs("lm-eval", [tmp_path / "empty"])


def test_an_edited_prompt_or_a_repeated_doc_is_refused(tmp_path: Path) -> None:
    folder = _copy("float32", tmp_path)
    path = next(folder.glob("samples_*.jsonl"))
    rows = _lines(path)
    edited = [dict(rows[0], arguments={"gen_args_0": {"arg_0": "another question", "arg_1": {}}}), *rows[1:]]
    _write_lines(path, edited)
    with pytest.raises(ConfigError, match=rf"{path.name}:1: the logged prompt_hash does not match"):
        read_logs("lm-eval", [folder])
    _write_lines(path, [*rows, rows[5]])
    with pytest.raises(ConfigError, match=rf"{path.name}:241: doc_id 5 of task 'arith' .* logged twice, first at "):
        read_logs("lm-eval", [folder])


def test_two_logs_whose_prompts_differ_for_a_doc_refuse_to_pair(tmp_path: Path) -> None:
    folder = _copy("bfloat16", tmp_path)
    path = next(folder.glob("samples_*.jsonl"))
    rows = _lines(path)
    prompt = rows[3]["arguments"]["gen_args_0"]["arg_0"] + " "
    import hashlib

    rows[3]["arguments"]["gen_args_0"]["arg_0"] = prompt
    rows[3]["prompt_hash"] = hashlib.sha256(prompt.encode()).hexdigest()
    _write_lines(path, rows)
    base = import_runs("lm-eval", [DATA / "float32"], name="a", out=tmp_path / "runs", log=lambda m: None)[0]
    cand = import_runs("lm-eval", [folder], name="b", out=tmp_path / "runs", log=lambda m: None)[0]
    with pytest.raises(PairingError, match="different prompts under the same id"):
        api.report([base.dir, cand.dir], log=lambda m: None)


def test_replicates_are_stored_beside_the_run_and_measure_the_noise(tmp_path: Path) -> None:
    again = _copy("float32", tmp_path)  # a second fp32 run: lm-eval on the CPU is deterministic
    stored = import_runs("lm-eval", [DATA / "float32", again], name="fp32", out=tmp_path / "runs", replicates=True,
                         log=lambda m: None)
    assert [s.dir.name for s in stored] == [stored[0].dir.name, stored[0].dir.name + "-r1"]
    cand = import_runs("lm-eval", [DATA / "bfloat16"], name="bf16", out=tmp_path / "runs", log=lambda m: None)[0]
    # replicates are used when asked for (or as a comparison recorded them), never picked up unasked
    assert api.report([stored[0].dir, cand.dir], log=lambda m: None).replicates == []
    report = api.report([stored[0].dir, cand.dir], log=lambda m: None, replicates=2)
    assert len(report.replicates) == 1 and report.stability is not None and report.stability.measured
    with pytest.raises(ConfigError, match="replicate 1 is not a repeat"):
        truncated = _copy("bfloat16", tmp_path / "t")
        path = next(truncated.glob("samples_*.jsonl"))
        _write_lines(path, _lines(path)[:239])
        next(truncated.glob("results_*.json")).unlink()
        import_runs("lm-eval", [DATA / "float32", truncated], name="x", out=tmp_path / "runs", replicates=True,
                    log=lambda m: None)


@pytest.mark.parametrize("value, outcome", [(1.0, "correct"), (0.0, "wrong_value"), (True, "correct"),
                                            (False, "wrong_value"), ("C", "correct"), ("I", "wrong_value"),
                                            ("P", "partial"), ("N", "missing"), (0.5, None), (23.4, None),
                                            (None, None), (float("nan"), None), ([1], None)])
def test_source_values_read_as_outcomes(value: object, outcome: str | None) -> None:
    assert outcome_of(value) == outcome


def test_a_task_without_a_pass_fail_metric_needs_a_mapping(tmp_path: Path) -> None:
    folder = _copy("float32", tmp_path)
    path = next(folder.glob("samples_*.jsonl"))
    rows = [dict(r, metrics=["bleu"], bleu=12.5) for r in _lines(path)]
    _write_lines(path, rows)
    with pytest.raises(ConfigError, match="logs no per-sample pass/fail metric \\(it logs: bleu,strip\\)"):
        read_logs("lm-eval", [folder])
    run = read_logs("lm-eval", [folder], FieldMap.model_validate({"fields": {"arith": {"type": "number"}}}))
    assert run.source["unscored_metrics"] == {"arith": ["bleu,strip"]}


def test_runs_scored_on_other_fields_refuse_to_pair(tmp_path: Path) -> None:
    """The same docs imported once with lm-eval's metric and once with a typed field: a clear
    PairingError (exit 2), not a KeyError deep in the pairing."""
    base = import_runs("lm-eval", [DATA / "float32"], name="metric", out=tmp_path, log=lambda m: None)[0]
    typed = import_runs("lm-eval", [DATA / "bfloat16"], name="typed", out=tmp_path,
                        mapping=load_field_map(pairs=["arith=number"]), log=lambda m: None)[0]
    with pytest.raises(PairingError, match=r"240 item\(s\) are scored on other fields .*exact_match,strip vs answer"):
        api.report([base.dir, typed.dir], log=lambda m: None)
