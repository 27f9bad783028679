"""The user's own documents as a pack: JSONL, CSV, Parquet or a `datasets` dataset,
with a field schema (name -> type) and a prompt template.

Problems with the data (an unreadable file, a missing column, a placeholder
the rows do not have) are found while the config is validated, so they are
configuration errors naming the field, not failures half-way through a run.
The data's content hash is part of the parameters, hence of the run's cache
key: editing the file never reuses a stale run.
"""

from __future__ import annotations

import hashlib
import string
from pathlib import Path
from typing import Any, Literal

from pydantic import Field as PydField, PrivateAttr, ValidationInfo, field_validator, model_validator

from evals.types import Field, FieldKind, Item
from tasks import register
from tasks.base import PackParams, PackSpec, TokenCounter

NAME = "files"
VERSION = "1"
_SUFFIXES = {".jsonl": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


class FilesParams(PackParams):
    path: str | None = None
    dataset: str | None = None
    split: str = "train"
    fields: dict[str, FieldKind] = PydField(min_length=1)
    gold_columns: dict[str, str] = PydField(default_factory=dict)
    field_options: dict[str, dict[str, Any]] = PydField(default_factory=dict)
    prompt: str
    system: str | None = None
    id_column: str | None = None
    answer_format: Literal["text", "json"] | None = None
    max_rows: int | None = PydField(None, ge=1)
    data_sha256: str | None = None  # filled in from the data itself; part of the cache key

    _rows: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @field_validator("path")
    @classmethod
    def _resolve(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return v
        base = Path((info.context or {}).get("base_dir", "."))
        path = Path(v).expanduser()
        return str(path if path.is_absolute() else (base / path).resolve())

    @model_validator(mode="after")
    def _load_and_check(self) -> "FilesParams":
        if (self.path is None) == (self.dataset is None):
            raise ValueError("give exactly one of `path` (a .jsonl/.json/.csv/.parquet file) or `dataset`")
        rows, digest = _read(self)
        if not rows:
            raise ValueError(f"{self.path or self.dataset}: no rows")
        columns = set(rows[0])
        for name in self.fields:
            col = self.gold_columns.get(name, name)
            if col not in columns:
                raise ValueError(f"fields.{name}: column {col!r} not found; columns: {', '.join(sorted(columns))}")
        for name in self.field_options:
            if name not in self.fields:
                raise ValueError(f"field_options.{name}: not one of the fields ({', '.join(self.fields)})")
        for template_name, template in (("prompt", self.prompt), ("system", self.system or "")):
            try:
                names = {f for _, f, _, _ in string.Formatter().parse(template) if f}
            except ValueError as exc:
                raise ValueError(f"{template_name}: bad template: {exc}") from None
            missing = sorted(n for n in names if n not in columns)
            if missing:
                raise ValueError(f"{template_name}: placeholder {{{missing[0]}}} is not a column; "
                                 f"columns: {', '.join(sorted(columns))}")
        if self.id_column:
            if self.id_column not in columns:
                raise ValueError(f"id_column: column {self.id_column!r} not found")
            ids = [_cell(r.get(self.id_column)) for r in rows]
            if None in ids or len(set(ids)) != len(ids):
                raise ValueError(f"id_column: {self.id_column!r} must be unique and non-empty in every row")
        self.data_sha256 = digest
        self._rows = rows[: self.max_rows] if self.max_rows else rows
        return self


def _cell(value: Any) -> str | None:
    """A gold cell as text; empty and NaN cells mean the document lacks the field."""
    if value is None:
        return None
    if isinstance(value, float) and value != value:
        return None
    text = str(value).strip()
    return text or None


def _read(params: FilesParams) -> tuple[list[dict[str, Any]], str]:
    import pandas as pd

    if params.dataset is not None:
        try:
            import datasets

            ds = datasets.load_dataset(params.dataset, split=params.split)
        except Exception as exc:  # datasets raises many kinds for a missing or unreachable dataset
            raise ValueError(f"dataset {params.dataset!r} (split {params.split!r}) cannot be loaded: {exc}") from None
        return [dict(r) for r in ds], f"datasets:{ds._fingerprint}"
    path = Path(params.path or "")
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"path: {path.name}: unsupported file type; use one of {', '.join(_SUFFIXES)}")
    try:
        raw = path.read_bytes()
        if kind == "csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        elif kind == "parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_json(path, lines=kind == "jsonl", dtype=False)
    except FileNotFoundError:
        raise ValueError(f"path: file not found: {path}") from None
    except Exception as exc:  # pandas raises many kinds for an unreadable file
        raise ValueError(f"path: cannot read {path}: {type(exc).__name__}: {exc}") from None
    return frame.to_dict(orient="records"), hashlib.sha256(raw).hexdigest()


def build(params: FilesParams, count: TokenCounter) -> list[Item]:
    answer_format = params.answer_format or ("text" if len(params.fields) == 1 else "json")
    items = []
    for index, row in enumerate(params._rows):
        text_row = {k: "" if _cell(v) is None else str(v) for k, v in row.items()}
        prompt = params.prompt.format_map(text_row)
        system = params.system.format_map(text_row) if params.system else None
        row_id = _cell(row.get(params.id_column)) if params.id_column else None
        items.append(
            Item(
                id=f"{NAME}/{row_id or index}",
                pack=NAME,
                prompt=prompt,
                system=system,
                fields=[
                    Field(name=name, kind=kind, gold=_cell(row.get(params.gold_columns.get(name, name))),
                          options=params.field_options.get(name, {}))
                    for name, kind in params.fields.items()
                ],
                meta={"row": index, "answer_format": answer_format, "context_tokens": count(prompt)},
            )
        )
    return items


SPEC = register(
    PackSpec(
        name=NAME,
        version=VERSION,
        params=FilesParams,
        build=build,  # type: ignore[arg-type]
        description="Your own documents (JSONL, CSV, Parquet or a datasets dataset) with a field schema and a prompt template.",
    )
)
