"""Which model a config names and where its files are: Hugging Face ids, GGUF files and HF folders made from them,
and what is prepared once, at first use. `hf_folder_cli` is the command that makes a folder
(`python -m evalrun.runners.models.hf_folder_cli`), not re-exported."""

from __future__ import annotations

from evalrun.runners.models._hf_folder import MARKER, is_complete, write_hf_folder
from evalrun.runners.models._models import (
    ModelError, ModelNotFound, ModelSource, device_kind, listening, load_model, load_tokenizer, local_dir, preparing,
    quiet_transformers, resolve_device, resolve_dtype, resolve_model, say,
)

__all__ = ["MARKER", "ModelError", "ModelNotFound", "ModelSource", "device_kind", "is_complete", "listening",
           "load_model", "load_tokenizer", "local_dir", "preparing", "quiet_transformers", "resolve_device",
           "resolve_dtype", "resolve_model", "say", "write_hf_folder"]
