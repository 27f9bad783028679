"""Reading the `files` pack's data into rows, exactly as written. JSON is read with the json module, not pandas
(which turns 20-digit integers into floats): integers stay ints, decimals keep their digits. A key or column
given twice is an error naming the file, line and key (json keeps the last, pandas renames: a gold lost)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrun.contract.errors import UsageError
from evalrun.contract.user_files import MAX_DATA_BYTES, FileRefused, read_bounded
from evalrun.tasks.base import ParamError

if TYPE_CHECKING:
    import pandas as pd

SUFFIXES = {".jsonl": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The frame's rows by column name (pandas types a record's keys as any hashable; ours are strings)."""
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict(orient="records")]


class Rows:
    """The rows, their columns in order of first appearance, a label per row for messages, the content hash."""

    def __init__(self, rows: list[dict[str, Any]], digest: str, lines: list[int] | None = None):
        columns: dict[str, None] = {}
        for row in rows:
            columns.update(dict.fromkeys(row))
        self.columns = list(columns)
        # every row has every column (missing ones are None, as pandas would have NaN)
        self.rows = [row if len(row) == len(columns) else {c: row.get(c) for c in columns} for row in rows]
        self.digest = digest
        self.lines = lines

    def where(self, index: int) -> str:
        """'row 3 (line 4)' for messages; rows count from 0 as in the item ids."""
        return f"row {index}" + (f" (line {self.lines[index]})" if self.lines else "")


def is_empty(value: Any) -> bool:
    """None, NaN, pandas' NA and blank text are no value at all."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    if isinstance(value, Decimal) and value.is_nan():
        return True
    if isinstance(value, str):
        return not value.strip()
    try:
        import pandas as pd

        return bool(pd.isna(value)) if not isinstance(value, (list, dict, tuple)) else False  # pyright: ignore[reportArgumentType, reportCallIssue]
    except (TypeError, ValueError):
        return False


def _records_from_json(data: Any, name: str) -> list[dict[str, Any]]:
    """A .json file: a list of objects, or the columns form pandas writes ({col: {idx: v}} / {col: [v]})."""
    if isinstance(data, list):
        for i, row in enumerate(data):
            if not isinstance(row, dict):
                raise ParamError(f"{name}: element {i} is {type(row).__name__}, expected an object "
                                 "(a .json file holds a list of objects, one per document)", "path")
        return data
    if isinstance(data, dict) and data and all(isinstance(v, (dict, list)) for v in data.values()):
        if all(isinstance(v, list) for v in data.values()):
            n = max(len(v) for v in data.values())
            return [{c: (v[i] if i < len(v) else None) for c, v in data.items()} for i in range(n)]
        if all(isinstance(v, dict) for v in data.values()):
            index = list(dict.fromkeys(k for v in data.values() for k in v))
            return [{c: v.get(i) for c, v in data.items()} for i in index]
    raise ParamError(f"{name}: expected a list of objects (one per document), got {type(data).__name__}", "path")


class _DuplicateKey(UsageError, ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: an object whose keys are unique, else _DuplicateKey."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _twice(what: str, key: str) -> str:
    return (f"{what} {key!r} appears twice; rename or remove one (only one of the two would be read, "
            "silently: a gold could come from either)")


def _loads(text: str) -> Any:
    return json.loads(text, parse_float=Decimal, object_pairs_hook=_unique_keys)


def _unique_header(raw: bytes, name: str) -> None:
    """The CSV header names each column once (blank names are pandas' `Unnamed: n`, never equal)."""
    head = raw[: 1 << 20].decode("utf-8-sig", errors="replace")
    header = next(csv.reader(io.StringIO(head)), [])
    seen: set[str] = set()
    for column in header:
        if column in seen and column.strip():
            raise ParamError(f"{name}: line 1: {_twice('column', column)}", "path")
        seen.add(column)


def _jsonl(raw: bytes, name: str, max_rows: int | None) -> tuple[list[dict[str, Any]], list[int]]:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    text = raw.decode("utf-8-sig")
    # JSON Lines ends records at "\n" only: str.splitlines() would also cut at U+2028, U+2029,
    # U+0085 and form feeds, which JSON allows raw inside strings
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            value = _loads(line)
        except _DuplicateKey as exc:
            raise ParamError(f"{name}: line {number}: {_twice('key', exc.key)}", "path") from None
        except ValueError as exc:
            raise ParamError(f"{name}: line {number} is not valid JSON: {exc}", "path") from None
        if not isinstance(value, dict):
            raise ParamError(f"{name}: line {number} is {type(value).__name__} {_short(value)}, expected a JSON "
                             "object (one document per line, e.g. {\"doc\": \"...\", \"total\": \"EUR 5.00\"})", "path")
        rows.append(value)
        lines.append(number)
        if max_rows and len(rows) >= max_rows:
            break
    return rows, lines


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def read_rows(path: str | None, dataset: str | None, split: str, max_rows: int | None) -> Rows:
    """The data's rows; every problem is a ParamError naming the file and the line or row."""
    if dataset is not None:
        try:
            import datasets

            ds = datasets.load_dataset(dataset, split=split)
        except Exception as exc:  # datasets raises many kinds for a missing or unreachable dataset
            raise ParamError(f"dataset {dataset!r} (split {split!r}) cannot be loaded: {exc}", "dataset") from None
        if max_rows:
            ds = ds.select(range(min(max_rows, len(ds))))
        return Rows([dict(r) for r in ds], f"datasets:{ds._fingerprint}")
    file = Path(path or "")
    fmt = SUFFIXES.get(file.suffix.lower())
    if fmt is None:
        raise ParamError(f"{file.name}: unsupported file type; use one of {', '.join(SUFFIXES)}", "path")
    try:  # a regular file up to MAX_DATA_BYTES, opened once: pandas reads these bytes, not the path again
        raw = read_bounded(file, MAX_DATA_BYTES)
    except FileNotFoundError:
        raise ParamError(f"file not found: {file}", "path") from None
    except FileRefused as exc:
        raise ParamError(f"{file} {exc}", "path") from None
    except OSError as exc:
        raise ParamError(f"cannot read {file}: {exc}", "path") from None
    digest = hashlib.sha256(raw).hexdigest()
    try:
        if fmt == "jsonl":
            rows, lines = _jsonl(raw, file.name, max_rows)
            return Rows(rows, digest, lines)
        if fmt == "json":
            records = _records_from_json(_loads(raw.decode("utf-8-sig")), file.name)
            return Rows(records[:max_rows] if max_rows else records, digest)
        import pandas as pd

        if fmt == "csv":
            _unique_header(raw, file.name)
            frame = pd.read_csv(io.BytesIO(raw), dtype=str, keep_default_na=False, nrows=max_rows)
            return Rows(_records(frame), digest)
        frame = pd.read_parquet(io.BytesIO(raw))
        if max_rows:
            frame = frame.head(max_rows)
        return Rows(_records(frame), digest)
    except ParamError:
        raise
    except _DuplicateKey as exc:  # a .json file: json knows no line numbers
        raise ParamError(f"{file.name}: {_twice('key', exc.key)}", "path") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParamError(f"cannot read {file}: {type(exc).__name__}: {exc}", "path") from None
    except Exception as exc:  # pandas/pyarrow raise many kinds for an unreadable file
        raise ParamError(f"cannot read {file}: {type(exc).__name__}: {exc}", "path") from None
