"""Provenance before PASS (src/evalrun/evals/gate/_provenance.py): a candidate whose config asks for a change the
engine says it did not apply is exit 4, "the flag is not in effect", naming the flag and both runs' evidence;
a real change passes and shows the engine's word; a config compared with itself is an A/A; a server that says
nothing is a note, not a failure. Served runs through the CLI against the deterministic server
(tests/fakes/openai_server.py) answering vLLM's real /metrics; hf methods from the proof they record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from evalrun.contract.manifest import RunManifest
from evalrun.evals.gate import NOT_IN_EFFECT, Provenance, provenance
from tests.conftest import run_cli
from tests.fakes.openai_server import ExactBackend, OpenAITestServer, gold_answers, items_of, served_config
from tests.runners.test_engine_evidence import AUTO_METRICS, FP8_METRICS

NEEDLES = {"pack": "needle_numbers", "lengths": [256], "depths": [0.0, 0.5, 1.0], "values": ["integer"]}


def _config(path: Path, name: str, base_url: str, args: list[str]) -> Path:
    served_config(path, name, base_url, [NEEDLES])
    data = yaml.safe_load(path.read_text()) | {"engine": {"name": "vllm", "args": args}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Three exact servers: one whose /metrics says an auto cache, one fp8, one without /metrics; the
    baseline (auto, asked `--kv-cache-dtype auto`) stored once."""
    root = tmp_path_factory.mktemp("provenance")
    backend = ExactBackend(gold_answers(items_of([NEEDLES])))
    with OpenAITestServer(backend) as auto, OpenAITestServer(backend) as fp8, OpenAITestServer(backend) as mute:
        auto.state.metrics, fp8.state.metrics = AUTO_METRICS, FP8_METRICS
        base = _config(root / "base.yaml", "base", auto.base_url, ["--kv-cache-dtype", "auto"])
        done = run_cli("run", str(base), "--out", str(root / "runs"))
        assert done.returncode == 0, done.stdout + done.stderr
        yield {"root": root, "base": base, "auto": auto.base_url, "fp8": fp8.base_url, "mute": mute.base_url}


def _compare(servers: dict[str, Any], cand: Path, tmp_path: Path) -> tuple[int, str, dict[str, Any]]:
    done = run_cli("compare", str(servers["base"]), str(cand), "--out", str(servers["root"] / "runs"),
                   "--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html"))
    return done.returncode, " ".join((done.stdout + done.stderr).split()), json.loads((tmp_path / "r.json").read_text())


@pytest.mark.slow
def test_a_flag_the_server_ignores_is_exit_4_naming_it_and_the_evidence(servers: dict[str, Any], tmp_path: Path) -> None:
    """The fp8 flag is written in the candidate's config, but the server it names runs an auto cache."""
    cand = _config(tmp_path / "ignored.yaml", "ignored", servers["auto"], ["--kv-cache-dtype", "fp8"])
    code, out, report = _compare(servers, cand, tmp_path)
    assert code == 4, out
    said = "KV auto, 93,184 tokens (728 blocks of 128) (from /metrics)"
    assert f"{NOT_IN_EFFECT}: ignored asks --kv-cache-dtype fp8, but its engine says what the baseline's does: " \
           f"{said}; baseline: {said}" in out
    assert NOT_IN_EFFECT in json.dumps(report) and NOT_IN_EFFECT in (tmp_path / "r.html").read_text()
    stored = RunManifest.model_validate_json(next((servers["root"] / "runs").glob("ignored-*/manifest.json")).read_text())
    assert stored.evidence is not None and stored.evidence.sources["cache_dtype"] == "/metrics"


@pytest.mark.slow
def test_a_real_change_passes_and_shows_the_engine_word(servers: dict[str, Any], tmp_path: Path) -> None:
    cand = _config(tmp_path / "fp8.yaml", "fp8", servers["fp8"], ["--kv-cache-dtype", "fp8"])
    code, out, _ = _compare(servers, cand, tmp_path)
    assert code == 0 and NOT_IN_EFFECT not in out, out
    assert "engine: KV fp8, 186,368 tokens (1,456 blocks of 128) (from /metrics)" in (tmp_path / "r.html").read_text()


@pytest.mark.slow
def test_a_config_against_itself_is_an_aa_and_silence_is_a_note(servers: dict[str, Any], tmp_path: Path) -> None:
    same = _config(tmp_path / "again.yaml", "again", servers["auto"], ["--kv-cache-dtype", "auto"])
    code, out, _ = _compare(servers, same, tmp_path)
    assert code == 0 and "A/A comparison" in out, out
    mute = _config(tmp_path / "mute.yaml", "mute", servers["mute"], ["--kv-cache-dtype", "fp8"])
    code, out, _ = _compare(servers, mute, tmp_path)
    assert code == 0 and "provenance not checked: the engine of mute said nothing of what it runs" in out, out


def _hf(name: str, acceleration: dict[str, Any], effects: dict[str, Any], key: str) -> RunManifest:
    return RunManifest.model_validate({"name": name, "key": key, "runner": "hf",
                                       "config": {"acceleration": acceleration}, "effects": effects})


KERNELS = {"requested": "sdpa", "before": "sdpa", "used": "sdpa", "attention_calls": {"sdpa": 120}}


def test_an_hf_method_whose_proof_changes_nothing_is_a_gap() -> None:
    base = _hf("baseline", {}, {}, "k0")
    same = provenance(base, _hf("kernels-sdpa", {"kernels": {"attention": "sdpa"}}, {"kernels": KERNELS}, "k1"), [])
    [gap] = same.gaps
    assert gap.reason.startswith(f"{NOT_IN_EFFECT}: kernels-sdpa asks acceleration.kernels {{'attention': 'sdpa'}}, "
                                 "but the model ran attention sdpa, as the baseline did")
    empty = provenance(base, _hf("w8", {"weights": {"quant": "int8"}}, {"weights": {}}, "k2"), [])
    assert "the method recorded no proof that it ran" in empty.gaps[0].reason
    eager = KERNELS | {"requested": "eager", "used": "eager", "attention_calls": {"eager": 120}}
    assert provenance(base, _hf("kernels-eager", {"kernels": {"attention": "eager"}}, {"kernels": eager}, "k3"),
                      []).gaps == []
    # against a baseline that runs eager, sdpa is a change
    eager_base = _hf("baseline-eager", {"kernels": {"attention": "eager"}}, {"kernels": eager}, "k4")
    assert provenance(eager_base, _hf("kernels-sdpa", {"kernels": {"attention": "sdpa"}},
                                      {"kernels": KERNELS | {"before": "eager"}}, "k1"), []).gaps == []
    assert provenance(base, _hf("again", {}, {}, "k0"), []).notes[0].startswith("A/A comparison")


def _served(name: str, key: str, log: str) -> RunManifest:
    """A launched llama.cpp run stored before evidence was recorded: its launch's log facts only."""
    from evalrun.runners.openai import kv_facts

    return RunManifest.model_validate({"name": name, "key": key, "runner": "openai",
                                       "server": {"launched": {"kv": kv_facts(log)}}})


def _llama(k: str, fa: str) -> str:
    """llama-cpp-python 0.3.36's lines for a 4096-cell cache of these K and V types."""
    mib = {"f16": "45.00", "q8_0": "23.91", "q4_0": "12.66"}[k]
    return (f"llama_context: flash_attn    = {fa}\nllama_kv_cache: size = {2 * float(mib):.2f} MiB (  4096 cells,  30 "
            f"layers,  1/1 seqs), K ({k}):   {mib} MiB, V ({k}):   {mib} MiB\n")


def test_the_shipped_llama_cpp_pairs_are_in_effect_and_an_ignored_flag_is_named() -> None:
    """configs/engines/llamacpp-{q4kv,q8kv,f16-fa}.yaml against llamacpp-f16.yaml, judged on their logs."""
    base = _served("llamacpp-f16", "k0", _llama("f16", "disabled"))
    for name, k, flags in (("q4kv", "q4_0", ["--type_k 2", "--type_v 2", "--flash_attn true"]),
                           ("q8kv", "q8_0", ["--type_k 8", "--type_v 8", "--flash_attn true"]),
                           ("f16-fa", "f16", ["--flash_attn true"])):
        assert provenance(base, _served(name, "k1", _llama(k, "enabled")), flags) == Provenance()
    # a build that quietly keeps flash attention off: the cache types changed, the kernel did not
    [gap] = provenance(base, _served("q8kv", "k1", _llama("q8_0", "disabled")),
                       ["--type_k 8", "--type_v 8", "--flash_attn true"]).gaps
    assert gap.reason.startswith(f"{NOT_IN_EFFECT}: q8kv asks --flash_attn true, but its engine says what")
    assert "KV q8_0/q8_0, 4,096 tokens, 47.82 MiB, flash attention off (from log)" in gap.reason
    # flags that no reported fact speaks to are not judged
    assert provenance(base, _served("dp", "k1", _llama("f16", "disabled")), ["--n_threads 4"]).gaps == []


# a launched engine (tests/runners/engine_fake.py) that logs a llama.cpp cache line while loading; the flags
# after the port are what the config asks of it, which this engine ignores: only its log says what it built
ENGINE = "import sys; from tests.runners.engine_fake import main; main([sys.argv[1], '--say', sys.argv[2]])"


@pytest.mark.slow
def test_a_launched_engine_whose_log_shows_the_baseline_cache_is_exit_4(tmp_path: Path) -> None:
    import sys
    import uuid

    from tests.runners.test_server_lifecycle import TASKS, _assert_none_left

    mark, out = uuid.uuid4().hex, tmp_path / "runs"

    def config(name: str, k: str, type_k: str) -> Path:
        command = [sys.executable, "-c", ENGINE, "{port}", _llama(k, "disabled").replace("\n", " "), "--type_k", type_k]
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({
            "name": name, "runner": "openai", "model": "smollm2-135m", "generation": {"max_new_tokens": 4},
            "server": {"command": command, "env": {"EVALRUN_TEST_MARK": mark}, "version": "test", "grace": 1},
            "tasks": TASKS[:1]}))
        return path

    base = config("f16", "f16", "1")
    done = run_cli("compare", str(base), str(config("ignored", "f16", "2")), "--out", str(out))
    flat = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 4, flat
    assert "the flag is not in effect: ignored asks --type_k 2, but its engine says what the baseline's does: " \
           "KV f16/f16, 4,096 tokens, 90 MiB, flash attention off (from log)" in flat
    done = run_cli("compare", str(base), str(config("q4", "q4_0", "2")), "--out", str(out))
    assert done.returncode == 0 and NOT_IN_EFFECT not in done.stdout, done.stdout + done.stderr
    assert "q4 engine: KV q4_0/q4_0, 4,096 tokens, 25.32 MiB, flash attention off (from log)" in done.stdout
    _assert_none_left(mark)
