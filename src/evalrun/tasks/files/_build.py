"""Building the `files` pack's items, only as many rows as asked for. A row's document is rendered and, if too
long, cut once for its longest question: every question then sees the same context (prefilled once)."""

from __future__ import annotations

from typing import Any, Protocol

from evalrun.contract.types import CONTEXT_SEPARATOR, Field, Item, ItemMeta, Truncation
from evalrun.tasks.base import PackDataError, TokenCounter
from evalrun.tasks.files._fit import count_within, cut_to_fit, truncate_to_fit
from evalrun.tasks.files._plan import Ask, shared_templates
from evalrun.tasks.files._templates import render, text_row


class Source(Protocol):
    """What the builder reads from the validated parameters."""

    name: str
    document: str | None
    system: str | None
    id_column: str | None
    truncate: bool


def _too_long(where: str, room: int) -> PackDataError:
    return PackDataError(f"{where}: the prompt is longer than the model's context allows (more than {room} "
                         "tokens); shorten the document, or set `truncate: true` to cut it to fit", "path")


def _question_key(ask: Ask) -> str:
    """Where a question that does not format comes from: the field's question, or (json mode) the fields."""
    return f"fields.{ask.fields[0].name}.question" if ask.suffix else "fields"


class RowBuilder:
    """The items of one row, in the order of the plan."""

    def __init__(self, params: Source, mode: str | None, asks: list[Ask], names: list[str], count: TokenCounter,
                 max_prompt_tokens: int | None):
        self.params, self.mode, self.asks, self.count, self.max = params, mode, asks, count, max_prompt_tokens
        self.names = names  # the fields in the order of each row's golds
        self.shared = shared_templates(params.document, asks) if params.document is not None else []

    def items(self, index: int, row: dict[str, Any], golds: list[str | None], where: str,
              options: dict[str, dict[str, Any]] | None = None) -> list[Item]:
        """`options`: each field's scorer options in this row, where the row sets its own locale."""
        trow = text_row(row)
        system = render(self.params.system, trow, where, "system") if self.params.system else None
        room = None if self.max is None else self.max - (self.count(system) if system else 0)
        context, doc_row, cut, tokens = self._context(trow, room, where)
        row_id = str(row.get(self.params.id_column)).strip() if self.params.id_column else None
        base = f"{self.params.name}/{row_id or index}"
        gold = dict(zip(self.names, golds))
        out = []
        for ask in self.asks:
            if ask.question is not None:
                assert context is not None, "a question is asked after the shared document (_plan)"
                question = render(ask.question, doc_row, where, _question_key(ask))
                prompt, truncated = context + CONTEXT_SEPARATOR + question, cut
                n = tokens.get(question)
                n = n if n is not None else self.count(prompt)
                item_system = system
            else:
                assert ask.prompt is not None
                prompt, item_system, truncated, n = self._own(ask, trow, system, room, where)
            meta = ItemMeta(row=index, context_tokens=n)
            if self.mode is not None:
                meta.mode = self.mode
            if self.mode == "per_field":
                meta.field, meta.decoy = ask.fields[0].name, gold[ask.fields[0].name] is None
            if truncated:
                meta.truncated = truncated
            out.append(Item(
                id=base + (f"/{ask.suffix}" if ask.suffix else ""),
                pack=self.params.name, prompt=prompt, system=item_system,
                context=context if ask.question is not None else None,
                question=question if ask.question is not None else None,
                answer_format=ask.answer_format,  # pyright: ignore[reportArgumentType]
                fields=[Field(name=f.name, kind=f.kind, gold=gold[f.name],
                              options=options[f.name] if options else f.options)
                        for f in ask.fields],
                meta=meta))
        return out

    def _context(self, trow: dict[str, str], room: int | None, where: str
                 ) -> tuple[str | None, dict[str, str], Truncation | None, dict[str, int]]:
        """(shared document, its row, what was cut, each question prompt's token count the fit check counted)."""
        if not self.shared or self.params.document is None:
            return None, trow, None, {}
        document = self.params.document
        context = render(document, trow, where, "document")
        if room is None:
            return context, trow, None, {}
        tokens: dict[str, int] = {}
        for ask in self.asks:
            if ask.question is None:
                continue
            question = render(ask.question, trow, where, _question_key(ask))
            n = count_within(context + CONTEXT_SEPARATOR + question, self.count, room)
            if n is None:
                if not self.params.truncate:
                    raise _too_long(where, room)
                cut_row, cut = cut_to_fit(self.shared, document, trow, self.count, room, where, "document")
                return render(document, cut_row, where, "document"), cut_row, cut, {}
            tokens[question] = n
        return context, trow, None, tokens

    def _own(self, ask: Ask, trow: dict[str, str], system: str | None, room: int | None, where: str
             ) -> tuple[str, str | None, Truncation | None, int]:
        """A whole-prompt item, fitted as the original form always was."""
        assert ask.prompt is not None
        prompt = render(ask.prompt, trow, where, "prompt")
        if room is None:
            return prompt, system, None, self.count(prompt)
        tokens = count_within(prompt, self.count, room)
        if tokens is not None:
            return prompt, system, None, tokens
        if not self.params.truncate:
            raise _too_long(where, room)
        assert self.max is not None
        prompt, system, truncated = truncate_to_fit(ask.prompt, self.params.system, trow, self.count, self.max, where)
        return prompt, system, truncated, self.count(prompt)
