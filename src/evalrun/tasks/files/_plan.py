"""Which items one row of the `files` pack becomes: the original form (one item per row from `prompt`),
`per_field` (one per (row, field), asked after the row's shared document so a runner prefills it once) or
`json` (one per row, one JSON object for every field)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evalrun.contract.types import CONTEXT_SEPARATOR
from evalrun.tasks.base import ParamError
from evalrun.tasks.files._schema import Resolved
from evalrun.values.registry import field_type


@dataclass(frozen=True)
class Ask:
    """One item a row becomes: its fields and a question (after the shared document) or a whole-prompt template."""

    suffix: str | None  # appended to the item id (the field name in per_field mode)
    fields: tuple[Resolved, ...]
    answer_format: str
    question: str | None = None
    prompt: str | None = None
    prompt_key: str = "prompt"


def _literal(text: str) -> str:
    """Text placed into a template as it is (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def json_instruction(fields: tuple[Resolved, ...]) -> str:
    """The json-mode request, a template: each field's name and type, and its question when it has one."""
    lines = []
    for f in fields:
        t = field_type(f.kind)
        hint, allowed = t.hint, f.options.get("allowed") if "allowed" in t.user_options() else None
        if isinstance(allowed, list) and allowed:
            hint = "one of " + ", ".join(str(a) for a in allowed)
        key = json.dumps(f.name, ensure_ascii=False)
        lines.append(_literal(f"- {key} ({hint}): ") + f.question if f.question else _literal(f"- {key}: {hint}"))
    head = _literal("Answer with one JSON object with exactly these keys (null for a value the document "
                    "does not state):")
    tail = "Answer with the JSON object only."
    return "\n".join([head, *lines, tail])


def _need(value: Any, message: str, key: str) -> None:
    if value is not None:
        raise ParamError(message, key)


def _per_field(fields: list[Resolved], document: str | None, prompt: str | None) -> list[Ask]:
    asks = []
    for f in fields:
        if f.question is not None and document is None:
            raise ParamError("a question is asked after the shared document: give the pack a `document:` "
                             "template (e.g. document: \"{text}\")", f"fields.{f.name}.question")
        if f.question is None and f.prompt is None and prompt is None:
            raise ParamError("no question for this field: give fields." + f.name + ".question (asked after "
                             "the document), fields." + f.name + ".prompt (its whole prompt) or a pack-level "
                             "`prompt`", f"fields.{f.name}.question")
        own = f.prompt if f.prompt is not None else (prompt if f.question is None else None)
        key = f"fields.{f.name}.prompt" if f.prompt is not None else "prompt"
        asks.append(Ask(f.name, (f,), "text", question=f.question, prompt=own, prompt_key=key))
    if document is not None and all(a.question is None for a in asks):
        raise ParamError("no field has a `question`, so the document is never asked about; give the fields "
                         "questions, or remove `document`", "document")
    if prompt is not None and all(f.question is not None or f.prompt is not None for f in fields):
        raise ParamError("every field has its own question or prompt, so this prompt is never used; "
                         "remove it", "prompt")
    return asks


def plan(fields: list[Resolved], mode: str | None, document: str | None, prompt: str | None,
         answer_format: str | None) -> tuple[str | None, list[Ask]]:
    """(the mode in effect, the items of a row); every combination that would ignore a key is a ParamError."""
    effective = mode or ("per_field" if document is not None else None)
    wanted = {"per_field": "text", "json": "json"}.get(effective or "")
    if wanted and answer_format not in (None, wanted):
        raise ParamError(f"mode {effective} answers in {wanted}; remove answer_format", "answer_format")
    if effective == "json":
        if document is None:
            raise ParamError("json mode asks about a shared document: give a `document:` template "
                             "(e.g. document: \"{text}\")", "document")
        _need(prompt, "json mode builds its prompt from `document:` and the fields; remove `prompt` "
              "(or omit `mode` and write the whole prompt yourself)", "prompt")
        for f in fields:
            _need(f.prompt, "json mode asks every field in one prompt; a field's own prompt is for "
                  "mode: per_field", f"fields.{f.name}.prompt")
        all_fields = tuple(fields)
        return effective, [Ask(None, all_fields, "json", question=json_instruction(all_fields))]
    if effective == "per_field":
        return effective, _per_field(fields, document, prompt)
    for f in fields:
        _need(f.question, "a question is asked after a shared document: give `document:` (and `mode: "
              "per_field` or `json`)", f"fields.{f.name}.question")
        _need(f.prompt, "a field's own prompt is for mode: per_field", f"fields.{f.name}.prompt")
    if prompt is None:
        raise ParamError("required key is missing (the whole prompt for each row), unless you give a "
                         "`document:` and per-field questions", "prompt")
    answer = answer_format or ("text" if len(fields) == 1 else "json")
    return None, [Ask(None, tuple(fields), answer, prompt=prompt)]


def shared_templates(document: str, asks: list[Ask]) -> list[str]:
    """The whole prompt template of each question asked after the document."""
    return [document + CONTEXT_SEPARATOR + a.question for a in asks if a.question is not None]
