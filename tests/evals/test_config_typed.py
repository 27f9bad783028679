"""Settings are typed from the YAML to the runner: the runner union picks the settings model by
`runner:`, the accelerations reach the runner as their settings instances, the SLO is an SLO, and
a key only the other runner reads is one config error line naming the file and the key."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from evalrun.contract.validation import first_error
from evalrun.evals.config._config import AnyRunConfig
from evalrun.evals.files import ConfigError
from evalrun.evals.config import HFRunConfig, OpenAIRunConfig, load_config
from evalrun.evals.timing import SLO
from evalrun.evals.gate._speed_rules import GoodputBound
from evalrun.runners.accel import build_accelerations
from evalrun.runners.accel.kv_cache import KVCacheSettings
from evalrun.runners.runner_settings import HFSettings
from tests.conftest import BASE_CONFIG as BASE, CONFIGS, run_cli

SERVED = ("name: served\nmodel: m\nrunner: openai\nopenai: {base_url: 'http://127.0.0.1:9/v1'}\n"
          "tasks:\n  - pack: needle_numbers\n    lengths: [512]\n    depths: [0.5]\n")


def test_the_runner_picks_the_settings_model() -> None:
    assert isinstance(load_config(CONFIGS / "baseline.yaml"), HFRunConfig)
    served = load_config(CONFIGS / "openai-baseline.yaml")
    assert isinstance(served, OpenAIRunConfig) and served.openai.base_url == "http://127.0.0.1:8000/v1"
    assert not hasattr(served, "batch_size") and not hasattr(served, "acceleration")
    union = TypeAdapter(AnyRunConfig)
    tasks = load_config(CONFIGS / "baseline.yaml").tasks
    assert isinstance(union.validate_python({"name": "a", "tasks": tasks, "runner": "hf"}), HFRunConfig)


def test_accelerations_reach_the_runner_as_their_settings_instances() -> None:
    config = load_config(CONFIGS / "int4kv.yaml")
    assert isinstance(config, HFRunConfig)
    settings = config.acceleration["kv_cache"]
    assert isinstance(settings, KVCacheSettings) and settings.quant == "int4"
    (method,) = build_accelerations(config.acceleration)
    assert method.settings is settings, "built from the validated instance, not from a dump of it"
    assert config.acceleration.model_dump(mode="json")["kv_cache"]["quant"] == "int4"


def test_the_slo_is_typed_and_dumps_as_a_config_would_write_it(cfg_file) -> None:
    config = load_config(cfg_file("c.yaml", BASE + "slo: {ttft: 500ms, e2el: 10}\n"))
    assert config.slo == SLO(ttft=0.5, e2el=0.01)
    written = config.model_dump(mode="json")["slo"]
    assert written == {"ttft": "0.5s", "e2el": "0.01s"}
    again = load_config(cfg_file("d.yaml", BASE + f"slo: {{ttft: {written['ttft']}, e2el: {written['e2el']}}}\n"))
    assert again.slo == config.slo
    assert GoodputBound.model_validate({"value": 0.9, "slo": {"tpot": "50ms"}}).slo == SLO(tpot=0.05)


@pytest.mark.parametrize("key, value", [("device", "cpu"), ("dtype", "float32"), ("batch_size", 8),
                                        ("prefix_reuse", True)])
def test_an_hf_key_on_an_openai_config_is_a_config_error(cfg_file, key: str, value: object) -> None:
    """(`logprobs` is read by both: a served engine is asked for its top-k too.)"""
    path = cfg_file("s.yaml", SERVED + f"{key}: {str(value).lower()}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.path == key and info.value.file == str(path)
    assert info.value.message == "only used with runner: hf (this config's runner is openai)"


def test_an_hf_key_on_an_openai_config_exits_2_naming_file_and_key(cfg_file) -> None:
    path = cfg_file("s.yaml", SERVED + "batch_size: 8\n")
    done = run_cli("run", str(path), "--out", str(path.parent / "runs"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{path}: batch_size: only used with runner: hf" in done.stdout + done.stderr


def test_null_hf_keys_on_an_openai_config_say_nothing(cfg_file) -> None:
    config = load_config(cfg_file("s.yaml", SERVED + "device: null\nacceleration: {}\nexecutor: inprocess\n"))
    assert isinstance(config, OpenAIRunConfig)


def test_the_hf_runners_rules_are_validators_on_its_settings() -> None:
    with pytest.raises(ValidationError) as info:
        HFSettings.model_validate({"ray": {"actors": 2}})
    assert first_error(info.value, HFSettings) == ("ray", "only used with executor: ray (this config's executor "
                                                          "is inprocess)")
    with pytest.raises(ValidationError) as info:
        HFSettings.model_validate({"batching": {"mode": "continuous"},
                                   "acceleration": {"speculative": {"method": "prompt_lookup"}}})
    loc, message = first_error(info.value, HFSettings)
    assert loc == "acceleration.speculative" and "cannot run with batching.mode: continuous" in message
    with pytest.raises(ValidationError) as info:
        HFSettings.model_validate({"acceleration": {"kv_cache": {"quant": "int5"}}})
    assert first_error(info.value, HFSettings)[0] == "acceleration.kv_cache"
