"""The contract every registered acceleration keeps (kvpress's tests/presses/test_presses.py
is the model): parametrized from the registry, so a new method or eviction policy is
tested by being added. On the tiny Llama, each method's full lifecycle (prepare,
calibrate, attach, generate, observe, detach) leaves the shared model's greedy
tokens and logits bit-identical; its effects are JSON with a label and headline
for reports; its share of the run key is the same in another process; its
capabilities are declared."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from evalrun.runners.accel import Capabilities, all_methods, build_accelerations, validate_accelerations
from evalrun.runners.accel.evict import policies
from tests.conftest import ROOT


def _cases() -> list[tuple[str, dict[str, Any]]]:
    cases = [(name, settings) for name, cls in sorted(all_methods().items()) for settings in cls.examples]
    cases += [("kv_cache", {"evict": {"method": p, "budget": 16}}) for p in sorted(policies())]
    return cases


CASES = _cases()
IDS = [f"{name}-{json.dumps(s, sort_keys=True)}" for name, s in CASES]


def _key_part(name: str, settings: dict[str, Any]) -> str:
    """What the method adds to the run key (src/evalrun/evals/execute.key_payload): its validated settings and
    any extra identity, hashed."""
    from evalrun.evals.store import run_key

    validated = validate_accelerations({name: settings})
    extras = {a.name: a.key_extras() for a in build_accelerations(validated)}
    return run_key({"acceleration": validated.model_dump(mode="json"), "acceleration_identity": extras})


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()


def _generate(model: Any, kwargs: dict[str, Any] | None = None) -> Any:
    ids = torch.randint(10, 1000, (1, 48), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, min_new_tokens=6,
                              do_sample=False, output_scores=True, return_dict_in_generate=True, pad_token_id=0,
                              **(kwargs or {}))


def test_every_method_has_examples_and_every_policy_is_covered() -> None:
    assert all(cls.examples for cls in all_methods().values()), "each method gives settings to test it with"
    assert {"streaming", "snapkv", "knorm"} <= set(policies())


@pytest.mark.parametrize(("name", "settings"), CASES, ids=IDS)
@pytest.mark.slow
def test_lifecycle_leaves_the_model_bit_identical_and_reports_effects(tiny, name: str, settings: dict) -> None:
    before = _generate(tiny)
    state = {k: v.clone() for k, v in tiny.state_dict().items()}
    accel = build_accelerations(validate_accelerations({name: settings}))[0]
    caps = accel.run_capabilities()
    model = accel.prepare_model(copy.deepcopy(tiny)) if caps.modifies_weights else tiny
    accel.set_calibration_texts(["The invoice total is EUR 1,204.50, due on 3 May 2024."] * 2)
    accel.attach(model)
    try:
        out = _generate(model, accel.generate_kwargs(model, 1))
        accel.observe(model, out.sequences)
    finally:
        accel.detach(model)
    after = _generate(tiny)
    assert torch.equal(before.sequences, after.sequences)
    assert all(torch.equal(a, b) for a, b in zip(before.scores, after.scores)), "logits changed after detach"
    assert all(torch.equal(v, tiny.state_dict()[k]) for k, v in state.items()), "weights changed"
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in tiny.modules()), "a hook was left behind"

    effects = accel.effects()
    assert json.loads(json.dumps(effects, allow_nan=False)) == effects, "effects must be plain JSON"
    cls = type(accel)
    label = cls.label(validate_accelerations({name: settings})[name].model_dump(mode="json"))
    assert isinstance(label, str) and label.startswith(name)
    headline = cls.headline(effects)
    assert headline and all(isinstance(h, str) and h for h in headline), "a headline shows the method took effect"
    # two workers that did exactly this: counters double, everything else (settings, rates, the model's
    # properties) is what one worker measured (src/evalrun/runners/accel/base.py merge_effects)
    merged = cls.merged_effects([effects, copy.deepcopy(effects)])
    assert merged.pop("workers") == 2
    for key, value in effects.items():
        if key in cls.effect_counters and value is not None:
            assert merged[key] == _doubled(value), key
        else:
            assert merged[key] == value, key


def _doubled(value):
    if isinstance(value, dict):
        return {k: _doubled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_doubled(v) for v in value]
    return round(value * 2, 4) if isinstance(value, float) else value * 2 if value is not None else None


@pytest.mark.parametrize(("name", "settings"), CASES, ids=IDS)
def test_capabilities_are_declared(name: str, settings: dict) -> None:
    cls = all_methods()[name]
    assert "capabilities" in vars(cls), f"{cls.__name__} declares its capabilities itself"
    assert isinstance(cls.capabilities, Capabilities)
    caps = build_accelerations(validate_accelerations({name: settings}))[0].run_capabilities()
    assert isinstance(caps, Capabilities) and caps.emulated == cls.capabilities.emulated
    if "evict" in settings:
        assert caps.max_batch_size == 1 and not caps.prefix_reuse


@pytest.mark.slow
def test_the_run_key_contribution_is_the_same_in_another_process() -> None:
    here = {i: _key_part(name, settings) for i, (name, settings) in zip(IDS, CASES)}
    code = ("import json, sys\nfrom tests.runners.test_accel_contract import CASES, IDS, _key_part\n"
            "print(json.dumps({i: _key_part(n, s) for i, (n, s) in zip(IDS, CASES)}))\n")
    env_python = sys.executable
    out = subprocess.run([env_python, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == here
    assert len(set(here.values())) == len(here), "different settings never share a key"
