"""The `compile` method through the runner on the tiny Llama: the compile is paid in an untimed
warm-up and reported apart, nothing compiles inside the timed batch of the same shape, and the
shared model leaves uncompiled."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.evals.files import ConfigError
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from tests.conftest import tiny_config


@pytest.mark.slow
def test_compile_time_is_measured_in_an_untimed_warmup(tiny_model_dir: Path, tmp_path: Path) -> None:
    # one batch of six: the timed batch has the warm-up's shapes, so it must compile nothing
    cfg = parse_config(tiny_config(tiny_model_dir, batch_size=8,
                                   acceleration={"compile": {"backend": "eager", "cache": "static"}}),
                       file=tmp_path / "cfg.yaml")
    prepared = prepare(cfg, tmp_path)
    result = execute(prepared, log=lambda _m: None)
    eff = result.manifest["effects"]["compile"]
    assert eff["compiled"] and eff["graphs_compiled"] >= 1 and eff["frames_not_compiled"] == 0
    assert eff["generate_calls"] == 2  # the warm-up and the timed batch
    assert eff["warmup_seconds"] > eff["compile_seconds"] > 0
    assert eff["recompilations"] == 0 and eff["timed_compile_seconds"] == 0
    seconds = {g.seconds for g in result.generations.values()}
    assert len(result.generations) == 6 and max(seconds) < eff["warmup_seconds"]
    assert "forward" not in vars(prepared.runner.model), "the shared model is left uncompiled"


@pytest.mark.parametrize(("settings", "key", "words"), [
    ({"backend": "eager", "mode": "max-autotune"}, "acceleration.compile.mode", "inductor setting"),
    ({"mode": "reduce-overhead"}, "acceleration.compile.mode", "CUDA graphs"),
])
def test_unusable_settings_are_config_errors(tiny_model_dir: Path, tmp_path: Path, settings: dict, key: str,
                                             words: str) -> None:
    with pytest.raises(ConfigError) as info:
        cfg = parse_config(tiny_config(tiny_model_dir, device="cpu", acceleration={"compile": settings}),
                           file=tmp_path / "c.yaml")
        prepare(cfg, tmp_path)
    assert f"{key}:" in str(info.value) and words in str(info.value)
