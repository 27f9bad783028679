"""The user's own documents as a pack: JSONL, CSV, Parquet or a `datasets` dataset,
with a field schema (name -> type) and a prompt template.

Problems with the data (an unreadable file, a missing column, a placeholder
the rows do not have, a template that does not format, a gold that is not a
value of its type or is missing without the field being `nullable`) are found
while the config is validated, so they are configuration errors naming the
field, not failures half-way through a run. A document longer than the
model's context is found when items are built (the model is known then) and
is an error too, unless `truncate: true` asks for it to be shortened.
The data's content hash is part of the parameters, hence of the run's cache
key: editing the file never reuses a stale run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field as PydField, PrivateAttr, ValidationInfo, field_validator, model_validator

from evalrun.contract.types import Field, FieldKind, Item, ItemMeta
from evalrun.tasks.base import BuildOptions, PackDataError, PackParams, PackSpec, ParamError, TokenCounter
from evalrun.tasks.files_data import Rows, is_empty, read_rows
from evalrun.tasks.files_fit import count_within, truncate_to_fit
from evalrun.tasks.files_gold import check_golds

NAME = "files"
VERSION = "1"


class FilesParams(PackParams):
    path: str | None = None
    dataset: str | None = None
    split: str = "train"
    fields: dict[str, FieldKind] = PydField(min_length=1)
    gold_columns: dict[str, str] = PydField(default_factory=dict)
    field_options: dict[str, dict[str, Any]] = PydField(default_factory=dict)
    # fields whose gold may be missing in a row: that row's field is then a decoy (gold None)
    nullable: list[str] = PydField(default_factory=list)
    prompt: str
    system: str | None = None
    id_column: str | None = None
    answer_format: Literal["text", "json"] | None = None
    max_rows: int | None = PydField(None, ge=1)
    # a document longer than the model's context: an error (false) or cut to fit, recorded in the item's meta
    truncate: bool = False
    data_sha256: str | None = None  # filled in from the data itself; part of the cache key

    _rows: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _golds: list[list[str | None]] = PrivateAttr(default_factory=list)
    _where: list[str] = PrivateAttr(default_factory=list)

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
            raise ParamError("give exactly one of `path` (a .jsonl/.json/.csv/.parquet file) or `dataset`")
        source = Path(self.path).name if self.path else str(self.dataset)
        data = read_rows(self.path, self.dataset, self.split, self.max_rows)
        if not data.rows:
            raise ParamError(f"{source}: no rows", "path" if self.path else "dataset")
        columns = set(data.columns)
        listed = ", ".join(sorted(columns))
        for name in self.fields:
            col = self.gold_columns.get(name, name)
            if col not in columns:
                raise ParamError(f"column {col!r} not found; columns: {listed}", f"fields.{name}")
        for key, names in (("field_options", list(self.field_options)), ("nullable", self.nullable),
                           ("gold_columns", list(self.gold_columns))):
            for name in names:
                if name not in self.fields:
                    raise ParamError(f"{name!r} is not one of the fields ({', '.join(self.fields)})", f"{key}.{name}"
                                     if key != "nullable" else key)
        _check_templates(self, data, listed)
        ids: list[str | None] | None = None
        if self.id_column:
            if self.id_column not in columns:
                raise ParamError(f"column {self.id_column!r} not found; columns: {listed}", "id_column")
            ids = [None if is_empty(r.get(self.id_column)) else str(r.get(self.id_column)).strip() for r in data.rows]
            if None in ids or len(set(ids)) != len(ids):
                raise ParamError(f"{self.id_column!r} must be unique and non-empty in every row", "id_column")
        self._golds = check_golds(data, dict(self.fields), self.gold_columns, self.field_options,
                                  set(self.nullable), source, ids)
        self.data_sha256 = data.digest
        self._rows = data.rows
        self._where = [data.where(i) + (f" (id {ids[i]!r})" if ids else "") for i in range(len(data.rows))]
        return self


def _text_row(row: dict[str, Any]) -> dict[str, str]:
    """Cells as the template sees them: empty cells are empty text."""
    return {k: "" if is_empty(v) else str(v) for k, v in row.items()}


def _check_templates(params: FilesParams, data: Rows, listed: str) -> None:
    """Placeholders must be columns, and the template must really format (a `{}`, `{doc!z}`
    or `{doc:d}` passes a placeholder scan and then fails on every row)."""
    import string

    first = _text_row(data.rows[0])
    for key, template in (("prompt", params.prompt), ("system", params.system)):
        if template is None:
            continue
        try:
            names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
        except ValueError as exc:
            raise ParamError(f"bad template: {exc}", key) from None
        if "" in names or any(n.isdigit() for n in names):
            raise ParamError("positional placeholder {} is not allowed: name a column, e.g. {doc}; "
                             "write {{ and }} for literal braces", key)
        if any("." in n or "[" in n for n in names):
            raise ParamError("placeholders name a column, e.g. {doc}; attribute and index access "
                             "({doc.x}, {doc[0]}) are not supported", key)
        missing = sorted(n for n in names if n not in first)
        if missing:
            raise ParamError(f"placeholder {{{missing[0]}}} is not a column; columns: {listed}", key)
        try:
            template.format_map(first)
        except (ValueError, KeyError, IndexError, AttributeError, TypeError) as exc:
            raise ParamError(f"template does not format ({type(exc).__name__}: {exc}); placeholders are "
                             "{column} with no conversion or format spec; write {{ and }} for literal braces", key) from None


def _render(params: FilesParams, row: dict[str, Any], where: str) -> tuple[str, str | None]:
    text_row = _text_row(row)
    try:
        prompt = params.prompt.format_map(text_row)
        system = params.system.format_map(text_row) if params.system else None
    except (ValueError, KeyError, IndexError, AttributeError, TypeError) as exc:
        raise PackDataError(f"{where}: the template does not format this row: {type(exc).__name__}: {exc}",
                            "prompt") from None
    return prompt, system


def build(params: FilesParams, count: TokenCounter, limit: int | None = None,
          max_prompt_tokens: int | None = None) -> list[Item]:
    """Items for the first `limit` rows only (nothing else is formatted or tokenized); a
    prompt over `max_prompt_tokens` is an error, or cut to fit with `truncate: true`."""
    answer_format = params.answer_format or ("text" if len(params.fields) == 1 else "json")
    rows = params._rows[:limit] if limit else params._rows
    items = []
    for index, row in enumerate(rows):
        where = params._where[index] if index < len(params._where) else f"row {index}"
        prompt, system = _render(params, row, where)
        tokens: int | None = None
        truncated: dict[str, Any] | None = None
        if max_prompt_tokens is not None:
            room = max_prompt_tokens - (count(system) if system else 0)
            tokens = count_within(prompt, count, room)
            if tokens is None:
                if not params.truncate:
                    raise PackDataError(
                        f"{where}: the prompt is longer than the model's context allows (more than {room} "
                        "tokens); shorten the document, or set `truncate: true` to cut it to fit", "path")
                prompt, system, truncated = truncate_to_fit(params.prompt, params.system, _text_row(row),
                                                            count, max_prompt_tokens, where)
                tokens = None
        meta = ItemMeta(row=index, context_tokens=tokens if tokens is not None else count(prompt))
        if truncated:
            meta.truncated = truncated  # type: ignore[assignment]
        row_id = str(row.get(params.id_column)).strip() if params.id_column else None
        golds = params._golds[index]
        items.append(
            Item(
                id=f"{NAME}/{row_id or index}",
                pack=NAME,
                prompt=prompt,
                system=system,
                answer_format=answer_format,
                fields=[
                    Field(name=name, kind=kind, gold=gold, options=params.field_options.get(name, {}))
                    for (name, kind), gold in zip(params.fields.items(), golds)
                ],
                meta=meta,
            )
        )
    return items


def _build_with(params: FilesParams, count: TokenCounter, options: BuildOptions) -> list[Item]:
    return build(params, count, options.limit, options.max_prompt_tokens)


SPEC = PackSpec(
    name=NAME,
    version=VERSION,
    params=FilesParams,
    build=build,  # type: ignore[arg-type]
    build_with=_build_with,  # type: ignore[arg-type]
    description="Your own documents (JSONL, CSV, Parquet or a datasets dataset) with a field schema and a prompt template.",
)
