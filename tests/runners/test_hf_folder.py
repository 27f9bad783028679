"""The default model's GGUF written once as a bf16 Hugging Face folder that an engine (vLLM) can load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrun.runners.models import MARKER, is_complete, resolve_model, write_hf_folder
from evalrun.runners.models.hf_folder_cli import main


def test_marker_names_the_gguf_and_dtype(tmp_path: Path) -> None:
    identity = {"gguf_sha256": "ab" * 32, "file": "m.gguf"}
    assert not is_complete(tmp_path / "absent", identity, "bfloat16")
    (tmp_path / MARKER).write_text(json.dumps({"dtype": "bfloat16", **identity}))
    assert is_complete(tmp_path, identity, "bfloat16")
    assert not is_complete(tmp_path, identity, "float32")
    assert not is_complete(tmp_path, {"gguf_sha256": "cd" * 32}, "bfloat16")
    (tmp_path / MARKER).write_text("{not json")
    assert not is_complete(tmp_path, identity, "bfloat16")


def test_refuses_a_model_that_is_not_a_gguf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["HuggingFaceTB/SmolLM2-135M-Instruct", str(tmp_path / "out")]) == 2
    assert "is not a GGUF" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.model
@pytest.mark.slow
def test_default_gguf_written_once_as_bf16_folder_with_chat_template(tmp_path: Path, smol_dir: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    source = resolve_model("smollm2-135m")
    gguf = Path(source.location)
    target = tmp_path / "models" / "smollm2-135m-instruct-hf"
    target.mkdir(parents=True)
    (target / "leftover.bin").write_text("an interrupted earlier write")  # no marker: replaced whole

    assert main(["smollm2-135m", str(target)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"written from {gguf.name} (bfloat16)")
    assert not (target / "leftover.bin").exists()
    assert not list(target.parent.glob("*.tmp*")), "the temporary folder is renamed, not left beside it"
    assert is_complete(target, source.identity, "bfloat16")

    config = json.loads((target / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    weights = load_file(target / "model.safetensors")
    assert {t.dtype for t in weights.values()} == {torch.bfloat16}
    # the same de-quantized weights as the in-process runner's float32 checkpoint, rounded to bf16
    reference = load_file(Path(smol_dir) / "model.safetensors")
    name = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(weights[name], reference[name].to(torch.bfloat16))

    from gguf import GGUFReader

    # the template as the GGUF stores it, read from its metadata (a second tokenizer conversion costs seconds)
    stored = GGUFReader(gguf).fields["tokenizer.chat_template"].contents()
    saved = AutoTokenizer.from_pretrained(target)
    assert saved.chat_template and saved.chat_template == stored
    messages = [{"role": "user", "content": "What is 2+2?"}]
    assert "What is 2+2?" in saved.apply_chat_template(messages, tokenize=False)

    stamp = (target / "model.safetensors").stat().st_mtime_ns
    assert main(["smollm2-135m", str(target)]) == 0
    assert "already written" in capsys.readouterr().out
    assert (target / "model.safetensors").stat().st_mtime_ns == stamp
    assert write_hf_folder(gguf, target, source.identity, "bfloat16") == target
    assert (target / "model.safetensors").stat().st_mtime_ns == stamp
