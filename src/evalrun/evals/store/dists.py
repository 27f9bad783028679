"""Per-token distributions stored beside a run's generations: `<name>.bin` (little-endian fp32/int32 arrays
back to back) and its index `<name>.jsonl` (docs/drift.md, 'What is stored'). Two kinds, the same layout:
`dists` (runners.logprobs.TokenDists) and `forced-<baseline key>` (ForcedDists).

A record is synced before its index line, and both before the item's generation line, so a kill leaves at
worst bytes no line points to. Reading checks each record against its line's length and sha256.
"""

from __future__ import annotations

import hashlib
import os
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

import numpy as np
from pydantic import BaseModel

from evalrun.evals.files import StoreLink, StoreWriteFailed, jsonl, store_files
from evalrun.runners.logprobs import ForcedDists, TokenDists

DISTS = "dists"  # the run's own distributions
FORMAT = 1

# each kind's arrays in file order: (field, dtype, per-token shape: "" one value, "k" k values)
_LAYOUT: dict[type, list[tuple[str, str, str]]] = {
    TokenDists: [("ids", "<i4", ""), ("logprob", "<f4", ""), ("top_ids", "<i4", "k"), ("top_logprobs", "<f4", "k"),
                 ("rest_logprob", "<f4", "")],
    ForcedDists: [("at_base_top", "<f4", "k"), ("rest_logprob", "<f4", ""), ("token_logprob", "<f4", ""),
                  ("top1_id", "<i4", ""), ("top1_logprob", "<f4", "")],
}

R = TypeVar("R", TokenDists, ForcedDists)


class IndexLine(BaseModel):
    """Where one item's record is in the binary file, and what it must hash to."""

    item_id: str
    offset: int
    length: int
    n: int  # tokens
    k: int
    sha256: str
    format: int = FORMAT
    baseline_sha256: str | None = None  # forced records: the baseline record they read


def forced_name(baseline_key: str) -> str:
    return f"forced-{baseline_key[:12]}"


def encode(record: TokenDists | ForcedDists) -> bytes:
    return b"".join(np.ascontiguousarray(getattr(record, name), dtype=dt).tobytes()
                    for name, dt, _ in _LAYOUT[type(record)])


def decode(kind: type[R], raw: bytes, n: int, k: int) -> R:
    out: dict[str, np.ndarray] = {}
    pos = 0
    for name, dt, per in _LAYOUT[kind]:
        shape = (n, k) if per == "k" else (n,)
        size = int(np.prod(shape)) * 4
        out[name] = np.frombuffer(raw[pos:pos + size], dtype=dt).reshape(shape).astype(dt[1:])
        pos += size
    if pos != len(raw):
        raise ValueError(f"{len(raw)} bytes for {n} tokens x top-{k}, expected {pos}")
    return kind(**out)


def encode_sha(record: TokenDists | ForcedDists) -> str:
    """What its index line holds."""
    return hashlib.sha256(encode(record)).hexdigest()


def bytes_per_token(k: int) -> int:
    """The binary size of one stored token of a run's distribution (the index line is apart)."""
    return 4 * sum(k if per == "k" else 1 for _, _, per in _LAYOUT[TokenDists])


class DistWriter:
    """Appends records to one sidecar of a run directory (the caller holds the run's lock)."""

    def __init__(self, run_dir: Path, name: str = DISTS):
        self.bin = run_dir / f"{name}.bin"
        self.index = run_dir / f"{name}.jsonl"
        self.records = 0

    def append(self, item_id: str, record: TokenDists | ForcedDists, baseline_sha256: str | None = None) -> None:
        data = encode(record)
        k = int(record.top_ids.shape[1]) if isinstance(record, TokenDists) else int(record.at_base_top.shape[1])
        offset = _append_bytes(self.bin, data)
        line = IndexLine(item_id=item_id, offset=offset, length=len(data), n=len(record), k=k,
                         sha256=hashlib.sha256(data).hexdigest(), baseline_sha256=baseline_sha256)
        jsonl.append(self.index, [line], sync=True)
        self.records += 1


def _append_bytes(path: Path, data: bytes) -> int:
    """Append `data` (synced) and return where it starts; a failed write is cut back off."""
    store_files.make_dir(path.parent)
    try:
        with store_files.opened(path, os.O_RDWR | os.O_APPEND | os.O_CREAT) as fd:
            start = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError:
                with suppress(OSError):
                    os.ftruncate(fd, start)
                raise
            return start
    except StoreLink:
        raise
    except OSError as exc:
        raise StoreWriteFailed(path, exc) from None


@dataclass
class Stored(Generic[R]):
    """The usable records of one sidecar by item, their index lines, and what was not usable."""

    records: dict[str, R] = field(default_factory=dict)
    lines: dict[str, IndexLine] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    present: bool = False  # the sidecar exists at all


def _check(raw: bytes, line: IndexLine, bin_path: Path, index_name: str) -> tuple[bytes | None, str | None]:
    """The record's bytes when they are all there and hash to its line, else why not."""
    chunk = raw[line.offset:line.offset + line.length]
    if len(chunk) != line.length:
        return None, (f"{bin_path}: record of item {line.item_id!r} is cut short ({len(chunk)} of {line.length} "
                      "bytes: the file was truncated); not used")
    if hashlib.sha256(chunk).hexdigest() != line.sha256:
        return None, (f"{bin_path}: record of item {line.item_id!r} does not match its sha256 in {index_name} "
                      "(the file was changed); not used")
    return chunk, None


def read(run_dir: Path, kind: type[R], name: str = DISTS, warn: Callable[[str], None] | None = None,
         answers: dict[str, list[int]] | None = None) -> Stored[R]:
    """Per item, the latest record whose bytes are all there and hash to its line; with `answers`
    (TokenDists only), whose token ids are the item's stored answer (a batch generated again, re-timed
    or re-asked, is passed over). An item with lines but no usable record is reported, naming the file."""
    bin_path, index_path = run_dir / f"{name}.bin", run_dir / f"{name}.jsonl"
    out: Stored[R] = Stored()
    if not store_files.exists(index_path):
        return out
    out.present = True
    problems: list[str] = []
    lines, _ = jsonl.read(index_path, IndexLine, problems.append)
    raw = store_files.read_bytes(bin_path) or b""
    by_item: dict[str, list[IndexLine]] = {}
    for _, line in lines:
        by_item.setdefault(line.item_id, []).append(line)
    for item_id, found in by_item.items():
        first_problem = None
        for line in reversed(found):
            chunk, problem = _check(raw, line, bin_path, index_path.name)
            try:
                record = decode(kind, chunk, line.n, line.k) if chunk is not None else None
            except ValueError as exc:
                record, problem = None, f"{bin_path}: record of item {item_id!r}: {exc}; not used"
            if record is not None and answers is not None and item_id in answers and \
                    getattr(record, "ids").tolist() != answers[item_id]:
                record, problem = None, (f"{bin_path}: record of item {item_id!r} is not its stored answer's "
                                         "tokens; not used")
            if record is not None:
                out.records[item_id], out.lines[item_id] = record, line
                break
            first_problem = first_problem or problem
        else:
            problems.append(first_problem or f"{bin_path}: no usable record of item {item_id!r}")
    out.problems = problems
    for message in problems:
        if warn is not None:
            warn(message)
    return out


def attach(request: Any, run_dir: Path) -> Any:
    """`request` (a runners.base.RunRequest) storing the distributions it captures (`top_k` > 0) in `run_dir`."""
    return replace(request, on_distribution=DistWriter(run_dir).append) if request.top_k > 0 else request


def summary(run_dir: Path) -> dict[str, Any] | None:
    """The manifest's `logprobs` record: what the run's own sidecar holds (None without one)."""
    stored = read(run_dir, TokenDists)
    if not stored.present:
        return None
    lines = stored.lines.values()
    ks = sorted({line.k for line in lines})
    return {"file": f"{DISTS}.bin", "index": f"{DISTS}.jsonl", "format": FORMAT, "top_k": ks[0] if len(ks) == 1 else ks,
            "items": len(stored.records), "tokens": sum(line.n for line in lines),
            "bytes": sum(line.length for line in lines),
            "dtype": "float32 logprobs, int32 ids", "unusable": len(stored.problems),
            "index_sha256": hashlib.sha256(store_files.read_bytes(run_dir / f"{DISTS}.jsonl") or b"").hexdigest()}


__all__ = ["DISTS", "DistWriter", "IndexLine", "attach", "Stored", "bytes_per_token", "decode", "encode", "encode_sha",
           "forced_name", "read", "summary"]
