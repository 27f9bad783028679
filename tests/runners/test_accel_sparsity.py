"""Activation sparsity (TEAL) on the tiny random Llama: the hooks really zero the
calibrated fraction, the counts in the manifest agree with an independent count,
and the shared model is left exactly as it was. No claims about accuracy here."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import evalrun.runners.accel.sparsity as sp
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.runners.accel import validate_accelerations
from tests.conftest import tiny_config

ONE_MODULE = "model.layers.1.mlp.down_proj"
ATTN_MODULE = "model.layers.0.self_attn.q_proj"


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path):
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    model.eval()
    return model


def _method(level: float, **over) -> sp.ActivationSparsity:
    settings = validate_accelerations({"sparsity": {"level": level, **over}})["sparsity"]
    return sp.ActivationSparsity(settings)


def _hooks(model) -> int:
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())


def _logits(model, ids: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(input_ids=ids, use_cache=False).logits


def _bundled_windows(model) -> list[list[int]]:
    return sp.calibration_windows(sp.model_tokenizer(model), sp.CalibrationSettings())


# --- settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, key",
    [
        ({"level": 0}, "sparsity.level"),
        ({"level": 1.2}, "sparsity.level"),
        ({"level": 1}, "sparsity.level"),
        ({"level": float("nan")}, "sparsity.level"),
        ({}, "sparsity.level"),
        ({"level": 0.5, "mlp_onyl": True}, "sparsity.mlp_onyl"),
        ({"level": 0.5, "calibration": {"samples": 0}}, "sparsity.calibration.samples"),
        ({"level": 0.5, "calibration": {"max_tokens": 0}}, "sparsity.calibration.max_tokens"),
        ({"level": 0.5, "calibration": {"source": "web"}}, "sparsity.calibration.source"),
        ({"level": 0.5, "calibration": {"size": 3}}, "sparsity.calibration.size"),
        ({"level": 0.5, "calibration": {"samples": 1000, "max_tokens": 4096}}, "sparsity.calibration"),
    ],
)
def test_impossible_settings_name_the_key(settings: dict, key: str) -> None:
    with pytest.raises(ValueError) as err:
        validate_accelerations({"sparsity": settings})
    assert str(err.value).startswith(f"{key}:"), str(err.value)


def test_defaults_and_emulated_flag() -> None:
    out = validate_accelerations({"sparsity": {"level": 0.5}})["sparsity"]
    assert out.model_dump(mode="json") == {"level": 0.5, "mlp_only": False,
                   "calibration": {"source": "bundled", "samples": 16, "max_tokens": 512}}
    assert sp.ActivationSparsity.capabilities.emulated is True


def test_config_file_parses() -> None:
    from evalrun.evals.config import load_config
    from tests.conftest import CONFIGS

    cfg = load_config(CONFIGS / "sparse50.yaml")
    assert cfg.name == "sparse50" and cfg.acceleration["sparsity"].level == 0.5


# --- targets ----------------------------------------------------------------------------------


def test_targets_are_the_layer_projections_only(tiny) -> None:
    names = set(sp.target_modules(tiny, mlp_only=False))
    assert len(names) == 2 * 7
    assert ATTN_MODULE in names and ONE_MODULE in names
    assert not any("lm_head" in n or "embed" in n for n in names)
    mlp = set(sp.target_modules(tiny, mlp_only=True))
    assert len(mlp) == 2 * 3 and all(n.rsplit(".", 1)[-1] in sp.MLP_SUFFIXES for n in mlp)


# --- on / off / detach ------------------------------------------------------------------------


@pytest.mark.slow
def test_on_changes_logits_and_detach_restores_them_exactly(tiny) -> None:
    ids = torch.tensor([_bundled_windows(tiny)[0][:64]])
    before = _logits(tiny, ids)
    hooks = _hooks(tiny)
    method = _method(0.5)
    method.attach(tiny)
    try:
        on = _logits(tiny, ids)
        assert _hooks(tiny) == hooks + 1 + 14  # padding tracker + one mask per projection
    finally:
        method.detach(tiny)
    after = _logits(tiny, ids)
    assert not torch.allclose(on, before, atol=1e-4), "sparsity left the logits unchanged"
    assert torch.equal(after, before), "detach did not restore the model exactly"
    assert _hooks(tiny) == hooks
    assert all(p.grad is None for p in tiny.parameters())


@pytest.mark.slow
def test_calibration_is_deterministic(tiny) -> None:
    a, b = _method(0.5), _method(0.5)
    for m in (a, b):
        m.attach(tiny)
        m.detach(tiny)
    assert a.thresholds == b.thresholds and all(v > 0 for v in a.thresholds.values())
    # q/k/v (and gate/up) read one tensor: one threshold
    qkv = {a.thresholds[f"model.layers.0.self_attn.{p}"] for p in ("q_proj", "k_proj", "v_proj")}
    gate_up = {a.thresholds[f"model.layers.1.mlp.{p}"] for p in ("gate_proj", "up_proj")}
    assert len(qkv) == 1 and len(gate_up) == 1
    c = _method(0.7)
    c.attach(tiny)
    c.detach(tiny)
    assert all(c.thresholds[n] > a.thresholds[n] for n in a.thresholds)


# --- achieved sparsity, measured independently -------------------------------------------------


@pytest.mark.parametrize("level", [0.25, 0.5, 0.7])
@pytest.mark.slow
def test_achieved_level_matches_target_and_an_independent_count(tiny, level: float) -> None:
    """Our own pre-hook, registered after attach, sees the input as the projection does and
    counts its exact zeros; those counts equal the method's, and the overall level is on target."""
    method = _method(level)
    method.attach(tiny)
    seen: dict[str, list[int]] = {ATTN_MODULE: [0, 0], ONE_MODULE: [0, 0]}

    def counter(name):
        def hook(_m, args):
            seen[name][0] += int((args[0] == 0).sum())
            seen[name][1] += args[0].numel()
        return hook

    modules = dict(tiny.named_modules())
    mine = [modules[n].register_forward_pre_hook(counter(n)) for n in seen]
    try:
        for window in _bundled_windows(tiny):
            _logits(tiny, torch.tensor([window]))
    finally:
        for h in mine:
            h.remove()
        method.detach(tiny)
    eff = method.effects()
    counts = method.measured()
    for name, (zeros, total) in seen.items():
        assert counts[name] == (zeros, total)
        assert eff["per_layer"][name] == round(zeros / total, 4)
    assert eff["target_level"] == level
    assert abs(eff["achieved_level"] - level) < 0.02, eff["achieved_level"]
    assert all(abs(v - level) < 0.02 for v in eff["per_layer"].values()), eff["per_layer"]
    assert eff["modules"] == 14 and eff["emulated"] is True and len(eff["thresholds"]) == 14
    assert eff["calibration"]["source"] == "bundled" and eff["calibration"]["tokens"] > 1000


@pytest.mark.slow
def test_left_padding_is_not_counted(tiny) -> None:
    """In a left-padded generate, pad positions are masked like any other but not counted."""
    tok = sp.model_tokenizer(tiny)
    method = _method(0.5)
    method.attach(tiny)
    ids = torch.tensor([[tok.pad_token_id] * 10 + list(range(100, 120)), list(range(200, 230))])
    mask = torch.ones_like(ids)
    mask[0, :10] = 0
    try:
        with torch.inference_mode():
            tiny.generate(input_ids=ids, attention_mask=mask, max_new_tokens=3, min_new_tokens=3, do_sample=False,
                          pad_token_id=tok.pad_token_id)
    finally:
        method.detach(tiny)
    _zeros, total = method.measured()[ONE_MODULE]
    # prefill: 20 + 30 real tokens; then two decode steps of one token per sequence
    assert total == (20 + 30 + 2 * 2) * tiny.config.intermediate_size


@pytest.mark.slow
def test_items_calibration(tiny) -> None:
    texts = [" ".join(sp.BUNDLED_TEXT[i : i + 4]) for i in range(0, 20, 4)]
    method = _method(0.5, calibration={"source": "items", "samples": 4, "max_tokens": 256})
    with pytest.raises(RuntimeError, match="calibration.source 'items'"):
        method.attach(tiny)
    assert _hooks(tiny) == 0
    method.set_calibration_texts(texts)
    method.attach(tiny)
    try:
        tok = sp.model_tokenizer(tiny)
        for t in texts:
            _logits(tiny, torch.tensor([tok(t, add_special_tokens=False)["input_ids"][:256]]))
    finally:
        method.detach(tiny)
    eff = method.effects()
    assert eff["calibration"]["source"] == "items" and eff["calibration"]["sequences"] == 4
    assert abs(eff["achieved_level"] - 0.5) < 0.03, eff["achieved_level"]


# --- through the runner -------------------------------------------------------------------------


_config = tiny_config


def _run(model_dir: Path, out: Path, prepared_hook=None, **over):
    prepared = prepare(parse_config(_config(model_dir, **over), file=out / "cfg.yaml"), out)
    if prepared_hook:
        prepared_hook(prepared)
    return execute(prepared, log=lambda _m: None)


@pytest.mark.slow
def test_run_records_effects_and_leaves_the_shared_model_clean(tiny_model_dir: Path, tmp_path: Path) -> None:
    from evalrun.runners.models._models import _LOADED

    base = _run(tiny_model_dir, tmp_path / "base")
    recorded: list[torch.Tensor] = []
    handles = []
    methods = []

    def record_before_masking(prepared):
        # once the method has attached (after calibration), a hook put in front of its mask
        # sees each input of the module unmasked
        method = prepared.runner.accelerations[0]
        methods.append(method)
        attach = method.attach

        def attach_then_record(model):
            attach(model)
            module = dict(model.named_modules())[ONE_MODULE]
            handles.append(module.register_forward_pre_hook(
                lambda _m, a: recorded.append(a[0].detach().abs().clone()), prepend=True))

        method.attach = attach_then_record

    try:
        sparse = _run(tiny_model_dir, tmp_path / "sparse", prepared_hook=record_before_masking,
                      batch_size=1, acceleration={"sparsity": {"level": 0.5}})
    finally:
        for h in handles:
            h.remove()
    again = _run(tiny_model_dir, tmp_path / "again")

    m = sparse.manifest
    assert m["emulated"] == ["sparsity"] and base.manifest["emulated"] == []
    eff = m["effects"]["sparsity"]
    assert eff["generate_calls"] == 6 and eff["modules"] == 14
    # on the run's own prompts (calibrated on the bundled text) the level is still near the target
    assert abs(eff["achieved_level"] - 0.5) < 0.05, eff["achieved_level"]
    # independent: recompute |x| < threshold from the unmasked inputs (batch size 1: no padding)
    thr = eff["thresholds"][ONE_MODULE]
    zeros = sum(int((x < thr).sum()) for x in recorded)
    total = sum(x.numel() for x in recorded)
    assert total == methods[0].measured()[ONE_MODULE][1]
    assert abs(zeros / total - eff["per_layer"][ONE_MODULE]) < 1e-3
    # off: the shared model is untouched, a later baseline equals the earlier one
    assert base.manifest["effects"] == {} and "sparsity" not in again.manifest["effects"]
    assert {k: g.output_ids for k, g in base.generations.items()} == {k: g.output_ids for k, g in again.generations.items()}
    for model, _tok, _s in _LOADED.values():
        assert _hooks(model) == 0
