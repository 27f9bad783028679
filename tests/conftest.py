"""Shared fixtures: the real default model's files, a tiny random Llama for
runner mechanics, and a CLI runner that checks exit codes the way CI sees them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"

# the smallest valid config, for tests of loading and validation
BASE_CONFIG = """
name: base
model: smollm2-135m
tasks:
  - pack: needle_numbers
    lengths: [512]
    depths: [0.5]
"""


@pytest.fixture(scope="session")
def smol_dir() -> str:
    """The default model converted to a plain checkpoint (cached on disk after the first time)."""
    from runners.models import local_dir, resolve_model

    return local_dir(resolve_model("smollm2-135m"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, smol_dir: str) -> Path:
    """A randomly initialised 2-layer Llama with the default model's tokenizer: fast, no download."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(smol_dir)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    out = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def tiny_config(model_dir: Path, **over) -> dict:
    """A run config for the tiny model: six short needle items in two batches."""
    data = {
        "name": "tiny",
        "model": str(model_dir),
        "batch_size": 4,
        "generation": {"max_new_tokens": 8},
        "tasks": [{"pack": "needle_numbers", "lengths": [96, 160, 240], "depths": [0.0, 1.0], "values": ["integer"]}],
    }
    data.update(over)
    return data


def write_config(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")
    return path


@pytest.fixture
def cfg_file(tmp_path: Path):
    """Write a config YAML into tmp_path: cfg_file('name.yaml', 'yaml text')."""

    def make(name: str, body: str) -> Path:
        return write_config(tmp_path / name, body)

    return make


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 900,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `evalrun` in a subprocess exactly as a user or CI would."""
    base = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env = {**base, "COLUMNS": "200", "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "evals.cli", *args],
        cwd=cwd or ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
