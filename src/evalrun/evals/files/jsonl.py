"""JSON Lines that survive any text, read without ever losing a valid record (docs/run-store.md, 'Integrity').

Records are split on b"\\n" only: splitlines() also splits on U+2028, U+0085, \\r or \\x0c, which documents and answers
contain. Lines are written ASCII-escaped so no raw separator appears inside one, and decoded with json.loads before
validation because pydantic's own JSON parser rejects a lone surrogate escape."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Generic, Sequence, TypeVar

from pydantic import BaseModel, ValidationError

from evalrun.contract.validation import first_error
import evalrun.evals.files.store_files as store_files

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Line:
    """One line of a file: 1-based number, byte offset, bytes without the newline."""

    number: int
    start: int
    raw: bytes


@dataclass
class Scan:
    """A file cut on b"\\n": its complete lines, and what follows the last newline (if anything)."""

    lines: list[Line]
    tail: Line | None
    size: int


def scan(raw: bytes) -> Scan:
    """Split on b"\\n" only; blank lines are dropped, numbering is kept."""
    lines: list[Line] = []
    pos = 0
    number = 0
    while pos < len(raw):
        end = raw.find(b"\n", pos)
        number += 1
        if end < 0:
            tail = Line(number, pos, raw[pos:])
            return Scan(lines, tail if tail.raw.strip() else None, len(raw))
        if raw[pos:end].strip():
            lines.append(Line(number, pos, raw[pos:end]))
        pos = end + 1
    return Scan(lines, None, len(raw))


def encode(record: BaseModel | dict[str, Any]) -> bytes:
    """One line, ASCII only (every other character escaped), ending in the one separator."""
    data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
    return json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def canonical(record: BaseModel | dict[str, Any]) -> str:
    """The record's content independent of how it was formatted on disk (for hashes and comparisons);
    a line's JSON object has the canonical form of the record written on it."""
    data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
    return json.dumps(data, ensure_ascii=True, sort_keys=True, separators=(",", ":"))


def _reason(exc: Exception, raw: bytes) -> str:
    if b"\x00" in raw:
        return "contains NUL bytes"
    if isinstance(exc, ValidationError):
        loc, message = first_error(exc)
        return f"not a valid record: {loc or 'record'}: {message}"
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} at column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(exc)


@dataclass
class Parsed(Generic[M]):
    """The record on one line (None when unreadable) and what the reader should be told about it."""

    record: M | None
    problem: str | None = None
    ignored_keys: list[str] = field(default_factory=list)


def parse(line: Line, model: type[M]) -> Parsed[M]:
    """One line decoded and validated; keys the model does not know (a newer writer's) are dropped and
    reported, instead of the whole line being refused by extra="forbid"."""
    try:
        data = json.loads(line.raw)
        if not isinstance(data, dict):
            return Parsed(None, "not a JSON object")
        unknown = sorted(set(data) - set(model.model_fields) - set(model.model_computed_fields))
        if unknown:
            data = {k: v for k, v in data.items() if k not in unknown}
        return Parsed(model.model_validate(data), None, unknown)
    except (ValueError, TypeError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, ValidationError
        return Parsed(None, _reason(exc, line.raw))


def read(path: Path, model: type[M], warn: Callable[[str], None]) -> tuple[list[tuple[Line, M]], Scan]:
    """Every readable record with its line, and the scan (for the caller to judge the tail).
    A complete last line without its newline is a record; a torn one is left to the caller."""
    found = scan(store_files.read_bytes(path) or b"")
    out: list[tuple[Line, M]] = []
    for line in [*found.lines, *([found.tail] if found.tail is not None else [])]:
        parsed = parse(line, model)
        if parsed.record is None and line is found.tail:
            break  # torn: the caller's to judge
        if parsed.problem is not None:
            warn(f"warning: {path}:{line.number}: unreadable line skipped ({parsed.problem}); every other line is kept")
        elif parsed.ignored_keys:
            warn(f"warning: {path}:{line.number}: unknown key(s) {', '.join(parsed.ignored_keys)} ignored "
                 "(written by a newer evalrun?); the rest of the line is read")
        if parsed.record is not None:
            out.append((line, parsed.record))
    if out and out[-1][0] is found.tail:
        found.tail = None  # complete, only its newline is missing: append() supplies one
    return out, found


def move_tail_aside(path: Path, found: Scan) -> Path | None:
    """Move a torn last line to `<file>.torn-<stamp>` (bytes kept exactly), then cut it from `path` so appends start on
    a clean line. Call only while holding the run's lock; does nothing if the file changed since it was scanned."""
    tail = found.tail
    if tail is None or store_files.size(path) != found.size:
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    side = path.with_name(f"{path.name}.torn-{stamp}")
    n = 0
    while not store_files.create_new(side, tail.raw):  # a name taken (by anything, a link too) is never reused
        n += 1
        side = path.with_name(f"{path.name}.torn-{stamp}-{n}")
    # changed since the scan (None): the copy stays beside it, the file as it is
    return side if store_files.truncate(path, tail.start, found.size) else None


def append(path: Path, records: Sequence[BaseModel], sync: bool = False) -> None:
    """Append records on a line of their own (store_files.append)."""
    store_files.append(path, b"".join(encode(r) for r in records), sync)


def write_atomic(path: Path, records: Sequence[BaseModel]) -> None:
    """Replace a whole file (scores) so a reader never sees half of it."""
    store_files.replace(path, b"".join(encode(r) for r in records))
