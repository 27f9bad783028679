"""The user's own documents as a pack (JSONL, CSV, Parquet, a `datasets` dataset) under a name of the user's
choosing, with typed fields and templates (see _plan for the modes). Data problems are found while the
config is validated (configuration errors naming the field, not failures mid-run); a document too long for
the context when items are built (unless `truncate: true`). The data's content hash, not its path, is keyed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field as PydField, PrivateAttr, ValidationInfo, field_validator, model_validator

from evalrun.contract.types import FieldKind, Item
from evalrun.tasks.base import BuildOptions, PackParams, PackSpec, ParamError, TokenCounter
from evalrun.tasks.files._build import RowBuilder
from evalrun.tasks.files._data import Rows, is_empty, read_rows
from evalrun.tasks.files._gold import check_golds
from evalrun.tasks.files._plan import Ask, plan
from evalrun.tasks.files._schema import DateOrder, PackField, Resolved, parse_fields, resolve_fields
from evalrun.tasks.files._templates import check_template, text_row
from evalrun.values.locales import locale_problem

NAME = "files"
VERSION = "1"
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]*"


class FilesParams(PackParams):
    # the pack name in every report and the start of every item id
    name: str = NAME
    path: str | None = None
    dataset: str | None = None
    split: str = "train"
    fields: dict[str, FieldKind | PackField] = PydField(min_length=1)
    gold_columns: dict[str, str] = PydField(default_factory=dict)
    field_options: dict[str, dict[str, Any]] = PydField(default_factory=dict)
    # fields whose gold may be missing in a row: that row's field is then a decoy (gold None)
    nullable: list[str] = PydField(default_factory=list)
    prompt: str | None = None
    # the shared context the fields' questions are asked about (a template over the columns)
    document: str | None = None
    # per_field: one item per (row, field); json: one item per row, all fields as one JSON object;
    # omitted: per_field when there is a `document`, else one item per row from `prompt`
    mode: Literal["per_field", "json"] | None = None
    # how the scorer reads numeric dates such as 03/04/2024; given to every date field
    date_order: DateOrder | None = None
    system: str | None = None
    id_column: str | None = None
    # a column holding each row's locale (de-DE, en-US, ...): its amounts' decimal separator and its
    # dates' order, for data that mixes documents of several countries (evalrun.values.locales)
    locale_column: str | None = None
    answer_format: Literal["text", "json"] | None = None
    max_rows: int | None = PydField(default=None, ge=1)
    # a document longer than the model's context: an error (false) or cut to fit, recorded in the item's meta
    truncate: bool = False
    data_sha256: str | None = None  # filled in from the data itself; part of the cache key

    _rows: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _golds: list[list[str | None]] = PrivateAttr(default_factory=list)
    _where: list[str] = PrivateAttr(default_factory=list)
    _fields: list[Resolved] = PrivateAttr(default_factory=list)
    _mode: str | None = PrivateAttr(None)
    _asks: list[Ask] = PrivateAttr(default_factory=list)
    _locales: list[str | None] = PrivateAttr(default_factory=list)

    def key_dump(self) -> dict[str, Any]:
        """The data keyed by content (data_sha256), not path; `locale_column` only when set (old keys unchanged)."""
        unset = {"locale_column"} if self.locale_column is None else set()
        return self.model_dump(mode="json", exclude={"path"} | unset)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(NAME_PATTERN, v) or len(v) > 64:
            raise ValueError(f"{v!r} is not a pack name: up to 64 letters, digits, '_', '.' or '-', "
                             "starting with a letter or digit (it starts every item id)")
        return v

    @field_validator("fields", mode="before")
    @classmethod
    def _parse_fields(cls, v: Any) -> Any:
        return parse_fields(v)

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
        self._fields = resolve_fields(dict(self.fields), self.gold_columns, self.field_options, self.nullable,
                                      self.date_order)
        self._mode, self._asks = plan(self._fields, self.mode, self.document, self.prompt, self.answer_format)
        source = Path(self.path).name if self.path else str(self.dataset)
        data = read_rows(self.path, self.dataset, self.split, self.max_rows)
        if not data.rows:
            raise ParamError(f"{source}: no rows", "path" if self.path else "dataset")
        columns = set(data.columns)
        listed = ", ".join(sorted(columns))
        for f in self._fields:
            if f.column not in columns:
                raise ParamError(f"column {f.column!r} not found; columns: {listed}", f"fields.{f.name}")
        _check_templates(self, data, listed)
        ids: list[str | None] | None = None
        if self.id_column:
            if self.id_column not in columns:
                raise ParamError(f"column {self.id_column!r} not found; columns: {listed}", "id_column")
            ids = [None if is_empty(r.get(self.id_column)) else str(r.get(self.id_column)).strip() for r in data.rows]
            if None in ids or len(set(ids)) != len(ids):
                raise ParamError(f"{self.id_column!r} must be unique and non-empty in every row", "id_column")
        self._locales = _row_locales(self.locale_column, data, columns, listed, source)
        self._golds = check_golds(data, {f.name: f.kind for f in self._fields},
                                  {f.name: f.column for f in self._fields},
                                  {f.name: f.options for f in self._fields},
                                  {f.name for f in self._fields if f.nullable}, source, ids, self.row_options)
        self.data_sha256 = data.digest
        self._rows = data.rows
        self._where = [data.where(i) + (f" (id {ids[i]!r})" if ids else "") for i in range(len(data.rows))]
        return self

    def row_options(self, index: int) -> dict[str, dict[str, Any]] | None:
        """Each field's scorer options in row `index` when the row sets its own locale, else None."""
        locale = self._locales[index] if index < len(self._locales) else None
        return None if locale is None else {f.name: f.options_for(locale) for f in self._fields}


def _row_locales(column: str | None, data: Rows, columns: set[str], listed: str, source: str) -> list[str | None]:
    """Each row's locale from `locale_column` (None for an empty cell); a value that is no locale names the row."""
    if column is None:
        return []
    if column not in columns:
        raise ParamError(f"column {column!r} not found; columns: {listed}", "locale_column")
    out: list[str | None] = []
    for index, row in enumerate(data.rows):
        value = None if is_empty(row.get(column)) else str(row.get(column)).strip()
        if value is not None and (problem := locale_problem(value)) is not None:
            raise ParamError(f"{source}: {data.where(index)}, column {column!r}: {problem}", "locale_column")
        out.append(value)
    return out


def _check_templates(params: FilesParams, data: Rows, listed: str) -> None:
    """Every template the items use must name columns and format the first row."""
    first = text_row(data.rows[0])
    templates: list[tuple[str, str | None]] = [("prompt", params.prompt), ("system", params.system),
                                               ("document", params.document)]
    for f in params._fields:
        templates += [(f"fields.{f.name}.question", f.question), (f"fields.{f.name}.prompt", f.prompt)]
    for key, template in templates:
        if template is not None:
            check_template(template, key, first, listed)


def build(params: FilesParams, count: TokenCounter, limit: int | None = None,
          max_prompt_tokens: int | None = None) -> list[Item]:
    """Items for the rows `limit` needs (no others tokenized); an over-long prompt errs, or is cut (`truncate`)."""
    builder = RowBuilder(params, params._mode, params._asks, [f.name for f in params._fields], count,
                         max_prompt_tokens)
    items: list[Item] = []
    for index, row in enumerate(params._rows):
        if limit and len(items) >= limit:
            break
        where = params._where[index] if index < len(params._where) else f"row {index}"
        items.extend(builder.items(index, row, params._golds[index], where, params.row_options(index)))
    return items[:limit] if limit else items


def _build_with(params: FilesParams, count: TokenCounter, options: BuildOptions) -> list[Item]:
    return build(params, count, options.limit, options.max_prompt_tokens)


SPEC = PackSpec(
    name=NAME,
    version=VERSION,
    params=FilesParams,
    build=build,
    build_with=_build_with,
    description=("Your own documents (JSONL, CSV, Parquet or a datasets dataset) with typed fields: one prompt per "
                 "document, or several questions about one shared document (per_field), or one JSON object (json)."),
)
