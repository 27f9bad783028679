"""A GGUF written once as a Hugging Face model folder, which engines such as vLLM load.

The folder is written to a temporary directory beside the target and renamed into place, with a marker
naming the source's hash and dtype, so an interrupted write is never taken for a complete one and a second
call is a no-op. The command line is runners/models/hf_folder_cli.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

MARKER = "evalrun-converted.json"


def is_complete(target: Path, identity: dict[str, Any], dtype: str) -> bool:
    """True when `target` holds a finished write of this GGUF at this dtype."""
    try:
        marker = json.loads((target / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return bool(marker.get("gguf_sha256") == identity.get("gguf_sha256") and marker.get("dtype") == dtype)


def _dequantize() -> dict[str, Any]:
    """Ask for dense weights where transformers would otherwise keep a GGUF's blocks packed (GgufConfig)."""
    try:
        from transformers import GgufConfig
    except ImportError:
        return {}  # this transformers always de-quantizes a GGUF on load
    return {"quantization_config": GgufConfig(dequantize=True)}


def write_hf_folder(gguf: Path, target: Path, identity: dict[str, Any], dtype: str = "bfloat16",
                    require_chat_template: bool = True) -> Path:
    """De-quantize `gguf` into `target` (weights in `dtype`); skip when done. Tokenizer and chat template are
    kept: a server's chat endpoint needs the template, though the in-process runner renders prompts itself."""
    if is_complete(target, identity, dtype):
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if require_chat_template and not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"{gguf}: the GGUF carries no chat template (tokenizer.chat_template)")
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=getattr(torch, dtype),
                                                 **_dequantize())
    # older transformers set a quantizer marker on a GGUF-loaded model and refuse to save it;
    # the weights are already de-quantized to float, so clearing it is safe.
    model.hf_quantizer = None  # set by from_pretrained, undeclared on PreTrainedModel  # pyright: ignore[reportArgumentType]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config  # pyright: ignore[reportAttributeAccessIssue]
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / MARKER).write_text(json.dumps({"from": str(gguf), "dtype": dtype, **identity}))
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and not is_complete(target, identity, dtype):
        shutil.rmtree(target)  # a stale or foreign folder under our name: replaced whole
    try:
        tmp.replace(target)
    except OSError:
        # another process won the race: use its copy
        shutil.rmtree(tmp, ignore_errors=True)
    return target
