"""Drift on the tiny random Llama: storing distributions changes no output, identical configs drift
at rounding level only (read in one pass: the same logits computed in another shape), an int2 KV cache drifts, prompt-lookup decoding (verified against the target) does not."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from evalrun.evals import api
from evalrun.evals.store import dists as dists_store
from evalrun.evals.drift import runs as drift_runs
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.reports.formats import render_markdown, report_json
from evalrun.reports.formats.html import render_html_text
from evalrun.reports.view import build_view
from evalrun.runners.logprobs import ForcedDists, TokenDists
from tests.conftest import tiny_config, write_tiny_model

INT2 = {"kv_cache": {"quant": "int2", "backend": "hqq", "group_size": 16, "residual_length": 0}}


def _cfg(model: Path, out: Path, **over):  # type: ignore[no-untyped-def]
    return parse_config(tiny_config(model, **over), file=out / f"{over.get('name', 'tiny')}.yaml")


def test_storing_distributions_changes_no_output(tiny_model_dir: Path, tmp_path: Path) -> None:
    runs = {k: execute(prepare(_cfg(tiny_model_dir, tmp_path, name=f"k{k}", logprobs=k), tmp_path),
                       log=lambda _m: None) for k in (20, 0)}
    assert runs[20].manifest["key"] == runs[0].manifest["key"]  # not part of the key: it changes no output
    assert {i: g.output for i, g in runs[20].generations.items()} == {i: g.output for i, g in runs[0].generations.items()}
    stored = dists_store.read(runs[20].dir, TokenDists)
    assert set(stored.records) == set(runs[20].generations) and stored.problems == []
    for item_id, rec in stored.records.items():
        assert rec.ids.tolist() == runs[20].generations[item_id].output_ids
        assert (rec.top_ids[:, 0] == rec.ids).all()  # greedy: the generated token is the top-1
        total = np.logaddexp(np.logaddexp.reduce(rec.top_logprobs, axis=1), rec.rest_logprob)
        assert np.abs(total).max() < 1e-5  # top-k plus the rest mass is the whole distribution
    assert runs[20].manifest["logprobs"]["top_k"] == 20
    assert runs[20].manifest["logprobs"]["bytes"] == 172 * sum(line.n for line in stored.lines.values())
    assert not dists_store.read(runs[0].dir, TokenDists).present and runs[0].manifest["logprobs"] is None


@pytest.fixture(scope="module")
def peaked_model_dir(tmp_path_factory: pytest.TempPathFactory, smol_dir: str) -> Path:
    """The tiny Llama drawn with 5x the default weight scale. At the default 0.02 its attention and next-token
    distributions are nearly flat, so an int2 cache moves them by about 2e-7 nats, the size of fp32 rounding
    over a 49k vocabulary (measured: int2 2.2e-7 mean KL, prompt lookup 4e-8 from one token at 1e-6). At 0.1
    the same cache drifts by 4.7e-4 while rounding stays under 1e-6."""
    return write_tiny_model(tmp_path_factory.mktemp("peaked-llama"), smol_dir, initializer_range=0.1)


def test_teacher_forced_drift(peaked_model_dir: Path, tmp_path: Path) -> None:
    base = _cfg(peaked_model_dir, tmp_path, name="base", batch_size=1)
    cands = [_cfg(peaked_model_dir, tmp_path, name="same", batch_size=1),
             _cfg(peaked_model_dir, tmp_path, name="int2", batch_size=1, acceleration=INT2),
             _cfg(peaked_model_dir, tmp_path, name="pld", batch_size=1,
                  acceleration={"speculative": {"method": "prompt_lookup"}})]
    report = api.compare(base, cands, out=tmp_path / "runs", log=lambda _m: None, drift=True)
    same, int2, pld = (report.drift[c.name] for c in cands)
    assert same.overall is not None and same.missing == 0 and same.overall.tokens == 6 * 8
    assert same.overall.max_kl < 1e-5 and same.overall.same_top1.value == 1.0
    assert int2.overall is not None and int2.overall.mean_kl.value > 0 and int2.overall.mean_kl.low > 0
    assert int2.overall.same_top1.value < 1.0
    # lossless: the target verifies every drafted token; in fp32 its logits match plain decoding to rounding
    assert pld.overall is not None and pld.missing == 0
    assert pld.overall.same_top1.value == 1.0 and pld.overall.max_kl < 1e-5
    # int2's drift is far above rounding: its interval clears the lossless method's largest token
    assert int2.overall.mean_kl.low > 10 * max(pld.overall.max_kl, same.overall.max_kl)
    # stored beside each candidate's run, its generations untouched
    cand_run = report.candidates[1].run
    samples = hashlib.sha256((cand_run.dir / "samples.jsonl").read_bytes()).hexdigest()
    name = dists_store.forced_name(report.baseline.manifest.key or "")
    assert len(dists_store.read(cand_run.dir, ForcedDists, name).records) == 6
    again = api.compare(base, cands[1:2], out=tmp_path / "runs", log=lambda _m: None, drift=True)
    assert again.drift["int2"].seconds is None  # the stored records are reused, nothing forced again
    assert again.drift["int2"].overall.mean_kl.value == int2.overall.mean_kl.value  # type: ignore[union-attr]
    assert hashlib.sha256((cand_run.dir / "samples.jsonl").read_bytes()).hexdigest() == samples
    md = render_markdown(build_view(report, html=False))
    assert "Drift of int2 on the baseline's answers" in md and "mean KL (95% CI)" in md
    data = report_json(build_view(report, html=False))["comparisons"][1]["drift"]
    assert data["overall"]["mean_kl"]["value"] == int2.overall.mean_kl.value and data["overall"]["tokens"] == 48
    page = render_html_text(build_view(report))
    assert "int2: drift on the baseline&#39;s answers" in page or "int2: drift on the baseline's answers" in page
    # the browser's strip: the baseline's answer decoded with its own tokenizer, one piece per token
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(peaked_model_dir))
    assert int2.tokens is same.tokens and int2.tokens_note is None and set(int2.tokens) == set(int2.per_item)
    for item_id, pieces in int2.tokens.items():
        ids = report.baseline.generations[item_id].output_ids
        assert len(pieces) == int2.per_item[item_id].kl.size == len(ids or [])
        assert "".join(pieces) == tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def test_no_logprobs_stored_is_said(tiny_model_dir: Path, tmp_path: Path) -> None:
    base = _cfg(tiny_model_dir, tmp_path, name="base", logprobs=0)
    report = api.compare(base, [_cfg(tiny_model_dir, tmp_path, name="cand")], out=tmp_path / "runs",
                         log=lambda _m: None, drift=True)
    assert report.drift == {} and report.drift_note == drift_runs.NO_LOGPROBS
    assert "no logprobs stored with the baseline" in render_markdown(build_view(report, html=False))


def test_aa_floor_effective_length_and_drift_rules(tiny_model_dir: Path, tmp_path: Path) -> None:
    """With --replicates 2 the replicate (other batches) read on the baseline's answers is the A/A floor
    (at rounding level in fp32 on the CPU); each candidate's drift carries it, its effective length and the
    gate's drift rules, and every renderer shows them."""
    tasks = [{"pack": "needle_numbers", "lengths": [96, 300, 600], "depths": [0.0, 1.0], "values": ["integer"]}]
    base = _cfg(tiny_model_dir, tmp_path, name="base", batch_size=4, tasks=tasks)
    int2 = _cfg(tiny_model_dir, tmp_path, name="int2", batch_size=4, tasks=tasks,
                acceleration=INT2, gate={"drift": [{"max_kl": {"mean": 1e-9}}, {"max_kl": {"p99": 1.0}}]})
    report = api.compare(base, [int2], out=tmp_path / "runs", log=lambda _m: None, drift=True, replicates=2)
    drift = report.drift[int2.name]
    assert drift.floor_run == report.noise_floor.run.name  # type: ignore[union-attr]
    assert drift.floor["all"].high < 1e-6  # deterministic fp32 on the CPU: batching moves nothing measurable
    assert drift.effective is not None and [b.label for b in drift.effective.buckets] == ["<=256", "<=512", "<=1k"]
    assert drift.effective.kl_bound == drift.floor["all"].high
    rules = {r.rule: r for r in report.verdicts[0].rules if r.rule.startswith("max_kl")}
    assert rules["max_kl[mean]"].status == "fail" and rules["max_kl[p99]"].status == "pass"
    view = build_view(report, html=False)
    md = render_markdown(view)
    assert "A/A mean KL (95% CI)" in md and "effective length (accuracy &gt;= 85%" in md and "max_kl[mean]" in md
    data = report_json(view)["comparisons"][0]["drift"]
    assert data["aa_floor"]["all"]["high"] == drift.floor["all"].high
    assert data["effective_length"]["buckets"][0]["bucket"] == "<=256"
    assert "effective length (accuracy" in render_html_text(build_view(report))


def test_an_answer_equal_to_the_baselines_is_read_off_its_generation(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Its generation's logits came from the prefix forcing would feed: stored as generated, equal to a
    forced read of the same config, and only the answers that depart are forced."""
    base = _cfg(tiny_model_dir, tmp_path, name="base", batch_size=1)
    same, later = (_cfg(tiny_model_dir, tmp_path, name=n, batch_size=1) for n in ("same", "later"))
    # hqq on axis 1: its groups stay within an item (axis 0 would tie items to their batch mates: next test)
    int2 = _cfg(tiny_model_dir, tmp_path, name="int2", batch_size=1,
                acceleration={"kv_cache": INT2["kv_cache"] | {"axis_key": 1, "axis_value": 1, "group_size": 8}})
    logs: list[str] = []
    report = api.compare(base, [same, int2], out=tmp_path / "runs", log=logs.append, drift=True)
    forcing = [m for m in logs if "teacher-forced scoring" in m]
    name = dists_store.forced_name(report.baseline.manifest.key or "")
    gens = report.baseline.generations
    departed = [i for i, g in report.candidates[1].run.generations.items() if g.output_ids != gens[i].output_ids]
    assert 0 < len(departed) < 6  # some answers departed (read again), some did not (read off the generation)
    assert not any(m.startswith("same:") for m in forcing)  # every answer equal: nothing read again
    assert [m for m in forcing if m.startswith("int2:")] == (
        [f"int2: teacher-forced scoring of {len(departed)} items on base's answers"] if departed else [])
    assert report.drift["same"].seconds is not None and report.drift["same"].seconds > 0  # recording them is counted
    watched = dists_store.read(report.candidates[0].run.dir, ForcedDists, name).records
    assert len(watched) == 6 and len(dists_store.read(report.candidates[1].run.dir, ForcedDists, name).records) == 6
    # the same config generated without drift, then forced: the records agree
    api.compare(base, [later], out=tmp_path / "runs", log=lambda _m: None)
    logs.clear()
    api.compare(base, [later], out=tmp_path / "runs", log=logs.append, drift=True)
    assert "later: teacher-forced scoring of 6 items on base's answers" in logs
    forced = dists_store.read(tmp_path / "runs" / next(p.name for p in (tmp_path / "runs").iterdir()
                                                        if p.name.startswith("later-")), ForcedDists, name).records
    for item_id, rec in watched.items():
        assert np.abs(rec.at_base_top - forced[item_id].at_base_top).max() < 1e-4
        assert (rec.top1_id == forced[item_id].top1_id).all()


def test_a_method_whose_items_share_batch_state_forces_every_answer(tiny_model_dir: Path, tmp_path: Path) -> None:
    """fp8's one scale per layer tensor spans the batch: a departed answer forced alone would meet other
    batch mates, so no answer is read off the generation and all are forced in their batches."""
    base = _cfg(tiny_model_dir, tmp_path, name="base", batch_size=2)
    fp8 = _cfg(tiny_model_dir, tmp_path, name="fp8", batch_size=2, acceleration={"kv_cache": {"quant": "fp8"}})
    logs: list[str] = []
    report = api.compare(base, [fp8], out=tmp_path / "runs", log=logs.append, drift=True)
    assert "fp8: teacher-forced scoring of 6 items on base's answers" in logs
    assert report.drift["fp8"].overall is not None and report.drift["fp8"].missing == 0
