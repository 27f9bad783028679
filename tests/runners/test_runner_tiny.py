"""Runner mechanics on a tiny random Llama: batching, padding, the KV-quant path,
errors kept per item, and resume after kill -9. No claims about accuracy here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalrun.evals import api
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from tests.conftest import ROOT, tiny_config


_config = tiny_config


def _run(model_dir: Path, out: Path, **over):
    cfg = parse_config(_config(model_dir, **over), file=out / "cfg.yaml")
    return execute(prepare(cfg, out), log=lambda _m: None)


def _padded(runner, batches) -> int:  # type: ignore[no-untyped-def]
    return sum(len(b) * max(runner.prompt_tokens(it) for it in b) for b in batches)


def test_batches_are_planned_by_tokens_longest_first(tiny_model_dir: Path, tmp_path: Path) -> None:
    prepared = prepare(parse_config(_config(tiny_model_dir, batch_size=4)), tmp_path)
    runner = prepared.runner
    batches = runner.batches(prepared.items)
    lengths = [runner.prompt_tokens(it) for b in batches for it in b]
    assert lengths == sorted(lengths, reverse=True)
    assert lengths[0] == runner.count_tokens(runner.render(batches[0][0]))
    # two 240-token needles alone, then the four shorter ones: less padding than 4 + 2, as many batches
    assert [len(b) for b in batches] == [2, 4]
    ordered = [it for b in batches for it in b]
    assert _padded(runner, batches) < _padded(runner, [ordered[:4], ordered[4:]])


@pytest.mark.slow
def test_left_padded_batches_match_one_by_one(tiny_model_dir: Path, tmp_path: Path) -> None:
    one = _run(tiny_model_dir, tmp_path / "a", batch_size=1)
    four = _run(tiny_model_dir, tmp_path / "b", batch_size=4)
    assert one.manifest["key"] != four.manifest["key"], "batch size can change outputs, so it is part of the key"
    assert {k: g.output for k, g in one.generations.items()} == {k: g.output for k, g in four.generations.items()}
    assert {g.batch_size for g in four.generations.values()} == {4, 2}
    for g in four.generations.values():
        assert g.new_tokens >= 1 and g.prompt_tokens > 0 and g.error is None
    # every answer says how it ended: a stop token, or max_new_tokens (8) reached; the manifest counts them
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    for g in four.generations.values():
        stopped = bool(g.output_ids) and g.output_ids[-1] in {tok.eos_token_id, tok.pad_token_id}
        assert g.finish_reason == ("stop" if stopped else "length") and (stopped or g.new_tokens == 8), g
    assert sum(four.manifest["finish_reasons"].values()) == 6
    # the manifest says what prefill computed: each batch's rows at its longest prompt
    batching = four.manifest["batching"]
    prompt_tokens = sum(g.prompt_tokens for g in four.generations.values())
    padded = _padded(prepare(parse_config(_config(tiny_model_dir, batch_size=4)), tmp_path).runner, [
        [it for it in four.items if four.generations[it.id].started_at == t]
        for t in sorted({g.started_at for g in four.generations.values()})])
    assert batching["prompt_tokens"] == prompt_tokens and batching["padded_prefill_tokens"] == padded > prompt_tokens
    assert batching["padding_share"] == round(1 - prompt_tokens / padded, 4)


@pytest.mark.parametrize("quant, max_ratio", [("int4", 0.45), ("int2", 0.35)])
@pytest.mark.slow
def test_kv_quant_path_is_taken_and_measured(tiny_model_dir: Path, tmp_path: Path, quant: str, max_ratio: float) -> None:
    accel = {"kv_cache": {"quant": quant, "backend": "quanto", "group_size": 16, "residual_length": 4}}
    result = _run(tiny_model_dir, tmp_path, acceleration=accel)
    eff = result.manifest["effects"]["kv_cache"]
    assert eff["generate_calls"] == 2  # two batches
    assert eff["cache_class"] == "QuantizedCache" and eff["quant"] == quant
    assert 0 < eff["kv_bytes_stored"] < max_ratio * eff["kv_bytes_full_precision"], eff
    assert eff["max_cached_tokens"] > 240 * 0.9


def test_no_acceleration_records_no_effects(tiny_model_dir: Path, tmp_path: Path) -> None:
    result = _run(tiny_model_dir, tmp_path)
    assert result.manifest["effects"] == {}
    assert result.manifest["status"] == "complete"


@pytest.mark.slow
def test_a_failing_batch_is_retried_item_by_item_and_errors_are_kept(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One item raises whenever it is generated (as some KV backends do at some lengths):
    its batch-mates still succeed, it is stored with its error, the run goes on."""
    from evalrun.runners.hf.runner import HFRunner

    real = HFRunner._generate_batch
    bad_id = "needle_numbers/L160-D1.00-integer"

    def flaky(self, items, request, shared=None):
        if any(it.id == bad_id for it in items):
            raise RuntimeError("shape mismatch at this length")
        return real(self, items, request, shared)

    monkeypatch.setattr(HFRunner, "_generate_batch", flaky)
    result = _run(tiny_model_dir, tmp_path)
    errors = {k: g.error for k, g in result.generations.items() if g.error}
    assert errors == {bad_id: "RuntimeError: shape mismatch at this length"}
    assert len(result.generations) == 6
    assert result.manifest["items_error"] == 1
    scored = {s.item_id: s for s in api.score(result)}
    assert scored[bad_id].fields["value"].outcome == "error"


def test_every_item_failing_is_a_run_failure(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    from evalrun.evals.run import RunFailed
    from evalrun.runners.hf.runner import HFRunner

    def broken(self, items, *_args):
        raise RuntimeError("backend unavailable")

    monkeypatch.setattr(HFRunner, "_generate_batch", broken)
    with pytest.raises(RunFailed, match="every item failed"):
        _run(tiny_model_dir, tmp_path)


@pytest.mark.slow
def test_kill_9_then_resume_loses_and_duplicates_nothing(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = _config(
        tiny_model_dir,
        batch_size=1,
        generation={"max_new_tokens": 24},
        tasks=[{"pack": "needle_numbers", "lengths": [400, 600], "depths": [0.0, 0.25, 0.5, 0.75, 1.0],
                "values": ["integer", "amount"]}],
    )
    import yaml

    cfg_path = tmp_path / "tiny.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "evalrun.cli", "run", str(cfg_path), "--out", str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = None
    deadline = time.time() + 300
    while time.time() < deadline:
        found = list(out.glob("tiny-*/samples.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 3:
            samples = found[0]
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert samples is not None, "the run never stored three items"
    before = len(samples.read_text().splitlines())
    assert before < 20, "the run finished before it could be killed; make it longer"

    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "resuming" in res.stderr
    ids = [json.loads(line)["item_id"] for line in samples.read_text().splitlines()]
    assert len(ids) == 20 and len(set(ids)) == 20

    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "reusing stored run" in again.stderr
    assert len(samples.read_text().splitlines()) == 20
