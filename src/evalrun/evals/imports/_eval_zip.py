"""An Inspect `.eval` log (a zip) read entry by entry, each entry bounded, never the whole log.

inspect_ai's `read_eval_log` validates every sample with its whole transcript and keeps them
all: a 10,000-sample log cost 40 s and 840 MB, and a 542 KB file whose sample inflated to
400 MB cost 1.35 GB. Here `header.json` and each `samples/*.json` are inflated in chunks and
refused past `MAX_ENTRY_BYTES`, and a sample keeps only what an import reads (its id, epoch,
input, target, output, scores and error, validated with inspect_ai's own `EvalSample`), so
memory is one sample's entry at a time plus the light records kept.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, Iterator

from evalrun.evals.files import ConfigError

MAX_ENTRY_BYTES = 64 * 2**20  # one inflated entry: far above a real sample, far below a zip bomb
_CHUNK = 2**20
_SAMPLE_KEYS = ("id", "epoch", "input", "target", "output", "scores", "error")
HEADER = "header.json"
SAMPLES = "samples/"


def _entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, cap: int) -> Any:
    """One entry's JSON, inflated in chunks and refused past `cap` bytes (its declared size first)."""
    where = f"{path}: {info.filename}"
    too_big = f"inflates past {cap // 2**20} MiB (the cap on one entry of an Inspect log): a zip bomb, or a sample too large to import"
    if info.file_size > cap:
        raise ConfigError(too_big, file=where)
    chunks, size = [], 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(_CHUNK):
                size += len(chunk)
                if size > cap:
                    raise ConfigError(too_big, file=where)
                chunks.append(chunk)
        return json.loads(b"".join(chunks))
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise ConfigError(f"not a readable Inspect log entry ({type(exc).__name__}: {str(exc)[:200]})",
                          file=where) from None


def _open(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ConfigError(f"not a readable Inspect eval log ({type(exc).__name__}: {str(exc)[:200]})",
                          file=path) from None


def read_header(path: Path, cap: int = MAX_ENTRY_BYTES) -> Any:
    """The log's header as inspect_ai's `EvalLog` without samples; None where it never wrote one
    (it did not finish)."""
    from inspect_ai.log import EvalLog

    with _open(path) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        if HEADER not in infos:
            return None
        data = _entry(zf, infos[HEADER], path, cap)
    try:
        return EvalLog.model_validate(data)
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ConfigError(f"not a readable Inspect eval log header ({first[:200]})", file=f"{path}: {HEADER}") from None


def iter_samples(path: Path, cap: int = MAX_ENTRY_BYTES) -> Iterator[Any]:
    """Each sample as an `EvalSample` holding only what an import reads, one entry at a time; a sample
    logged again (a retried one) is read once, its last entry, as inspect_ai reads it."""
    from inspect_ai.log import EvalSample

    with _open(path) as zf:
        last = {i.filename: i for i in zf.infolist() if i.filename.startswith(SAMPLES) and i.filename.endswith(".json")}
        for name, info in last.items():
            data = _entry(zf, info, path, cap)
            try:
                yield EvalSample.model_validate({k: data[k] for k in _SAMPLE_KEYS if k in data})
            except (TypeError, ValueError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                raise ConfigError(f"not an Inspect sample ({first[:200]})", file=f"{path}: {name}") from None
