"""The `files` pack's field schema: a type name or a mapping per field, both one PackField."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import ValidationError

from evalrun.contract.validation import first_error
from evalrun.tasks.base import ParamError
from evalrun.values.locales import locale_problem
from evalrun.values.registry import KINDS, FieldSpec, field_type, user_option_problem

DateOrder = Literal["dmy", "mdy", "ymd"]
DATE_ORDERS: tuple[str, ...] = get_args(DateOrder)


class PackField(FieldSpec):
    """One field in the mapping form; unknown keys are errors at `fields.NAME.KEY`."""

    # asked after the shared document (a template over the row's columns)
    question: str | None = None
    # this field's own whole prompt (a template), instead of the shared document
    prompt: str | None = None
    column: str | None = None
    nullable: bool = False


@dataclass(frozen=True)
class Resolved:
    """A field with its settings merged: gold column, scorer options (date_order too), whether missing is a decoy."""

    name: str
    kind: str
    column: str
    options: dict[str, Any]
    nullable: bool
    question: str | None
    prompt: str | None
    # the options as written, less `locale`, and the pack's date_order: what a row's own locale starts from
    base_options: dict[str, Any] | None = None
    date_order: str | None = None

    def options_for(self, locale: str | None) -> dict[str, Any]:
        """The scorer's options in a row whose document is in `locale` (None: the field's own): an explicit option wins,
        then the row's locale, the field's `locale`, the pack's `date_order`."""
        if locale is None or self.base_options is None:
            return self.options
        return scorer_options(self.kind, self.base_options, locale, self.date_order)


def scorer_options(kind: str, options: dict[str, Any], locale: str | None, date_order: str | None) -> dict[str, Any]:
    """A field's scorer options with its locale written out (FieldType.with_locale) and the pack's date_order."""
    t = field_type(kind)
    options = t.with_locale(options, locale)
    if date_order is not None and "date_order" in t.user_options():
        options = {"date_order": date_order, **options}
    return options


def parse_fields(raw: Any) -> Any:
    """Each field as its type name or a PackField, with errors at `NAME` or `NAME.KEY`."""
    if not isinstance(raw, dict):
        return raw  # pydantic says what is wrong with a non-mapping
    out: dict[str, str | PackField] = {}
    for name, value in raw.items():
        if isinstance(value, str):
            if value not in KINDS:
                raise ParamError(f"invalid value {value!r}; allowed: {', '.join(KINDS)} "
                                 "(or a mapping {type: ..., question: ...})", str(name))
            out[name] = value
        elif isinstance(value, PackField):
            out[name] = value
        elif isinstance(value, dict):
            try:
                out[name] = PackField.model_validate(value)
            except ValidationError as exc:
                key, message = first_error(exc, PackField, show_input=False)  # worded as config errors are
                raise ParamError(message, f"{name}.{key}" if key else str(name)) from None
            if value.get("question") is not None and value.get("prompt") is not None:
                raise ParamError("give either `question` (asked after the shared document) or `prompt` "
                                 "(this field's whole prompt), not both", f"{name}.prompt")
        else:
            raise ParamError(f"expected a type ({', '.join(KINDS)}) or a mapping {{type: ..., question: ...}}, "
                             f"got {type(value).__name__}", str(name))
    return out


def resolve_fields(fields: dict[str, str | PackField], gold_columns: dict[str, str],
                   field_options: dict[str, dict[str, Any]], nullable: list[str],
                   date_order: str | None) -> list[Resolved]:
    """Every field with its settings merged, in order; `date_order` goes into each date field's options unless it
    gives its own (absent when neither does, so the original form keeps its options exactly)."""
    for key, names in (("field_options", list(field_options)), ("nullable", nullable),
                       ("gold_columns", list(gold_columns))):
        for name in names:
            if name not in fields:
                raise ParamError(f"{name!r} is not one of the fields ({', '.join(fields)})",
                                 f"{key}.{name}" if key != "nullable" else key)
    out: list[Resolved] = []
    for name, value in fields.items():
        spec = PackField(type=value) if isinstance(value, str) else value
        for old, attr, given in (("gold_columns", "column", spec.column is not None and name in gold_columns),
                                 ("field_options", "options", bool(spec.options) and name in field_options),
                                 ("nullable", "nullable", spec.nullable and name in nullable)):
            if given:
                raise ParamError(f"{name!r} is also given as fields.{name}.{attr}; keep one of the two",
                                 f"{old}.{name}" if old != "nullable" else old)
        options = dict(spec.options or field_options.get(name, {}))
        key = f"fields.{name}.options" if spec.options else f"field_options.{name}"
        locale = options.pop("locale", None)  # read here: what it decides is written out for the scorer
        if (problem := locale_problem(locale)) is not None:
            raise ParamError(problem, f"{key}.locale")
        # every option must be one the scorer reads for this type, with a value it can read
        if (bad := user_option_problem(spec.type, options)) is not None:
            raise ParamError(bad[1], f"{key}.{bad[0]}")
        out.append(Resolved(name=name, kind=spec.type, column=spec.column or gold_columns.get(name, name),
                            options=scorer_options(spec.type, options, locale, date_order),
                            nullable=spec.nullable or name in nullable,
                            question=spec.question, prompt=spec.prompt, base_options=options, date_order=date_order))
    return out
