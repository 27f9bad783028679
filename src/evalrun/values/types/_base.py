"""What a field type is: one class per file in this folder, found by the registry.

A type says how it reads a gold, how it finds candidate values in an answer (with
their spans), how a gold and a candidate compare (outcome, sub-code, detail), which
options it takes (a pydantic model: a misspelt or malformed option is an error
naming it), and the examples that prove each of its sub-codes reachable. The scorer
(`evalrun.evals.scoring.fields`) and the packs that check golds before a run
(`evalrun.tasks.files._gold`) both go through the type, so they never disagree.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Hashable
from functools import lru_cache
from typing import Any, ClassVar, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalrun.contract.validation import first_error, raised_by_validator
from evalrun.values.absent import is_absent
from evalrun.values.clauses import Names
from evalrun.values.dates import mask_dates
from evalrun.values.locales import locale_problem
from evalrun.values.text import prep, word_count
from evalrun.values.types._spans import stripped

Verdict = tuple[str, "str | None", "str | None"]  # outcome, sub-code, detail
SELF_CONTRADICTING = "self_contradicting"  # any type: states a value and says the field has none


class Found(NamedTuple):
    """One candidate value and where it was written: answer[start:end]."""

    start: int
    end: int
    value: Any


class Example(NamedTuple):
    """A (gold, answer) pair that earns one sub-code through score_field."""

    gold: str
    pred: str
    options: dict[str, Any] = {}


def _is_names(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value))


class Options(BaseModel):
    """The options every field type reads. Values are checked, not converted: the scorer
    reads the options dict as given."""

    model_config = ConfigDict(extra="forbid")

    field: str | None = Field(default=None, description="the field's name; passed by the scorer itself, not set in a config")
    aliases: str | list[str] | None = Field(
        default=None, description="other names of the field; with `field` they let list answers and refusals be read "
        "clause by clause")

    @field_validator("field", mode="before")
    @classmethod
    def _field(cls, v: Any) -> Any:
        if v is not None and not isinstance(v, str):
            raise ValueError(f"field must be the field's name; got {v!r}")
        return v

    @field_validator("aliases", mode="before")
    @classmethod
    def _aliases(cls, v: Any) -> Any:
        if v is not None and not _is_names(v):
            raise ValueError(f"aliases must be a list of names; got {v!r}")
        return v


class LocaleOptions(Options):
    """Options of the types whose written form depends on the country (numbers, dates)."""

    locale: str | None = Field(default=None, description="a language tag (de-CH, en-US, ja-JP) whose decimal separator "
                               "and date order apply where `decimal` / `date_order` are not set")

    @field_validator("locale", mode="before")
    @classmethod
    def _locale(cls, v: Any) -> Any:
        if v is not None and (problem := locale_problem(v)) is not None:
            raise ValueError(problem)
        return v


# options the scorer sets itself; a config may not
INTERNAL_OPTIONS = frozenset({"field"})


def option_error(model: type[Options], options: dict[str, Any]) -> tuple[str, str] | None:
    """(option, what is wrong) for the first option of `model` that cannot be read, else None.
    Keys that are not options of the model are not judged here."""
    if not options:
        return None
    fields = _NAMES.get(model) or _NAMES.setdefault(model, frozenset(model.model_fields))
    known = {k: v for k, v in options.items() if k in fields}
    if not known:
        return None
    try:
        text = repr(known)  # the scorer checks every call's options: the same options are checked once
    except Exception:  # noqa: BLE001 - an unprintable value is checked uncached
        text = ""
    if 0 < len(text) <= 4096:
        return _validated(model, text, known)
    return _validate(model, known)


def _validated(model: type[Options], text: str, known: dict[str, Any]) -> tuple[str, str] | None:
    key = (model, text)
    if key not in _SEEN:
        if len(_SEEN) >= 4096:
            _SEEN.clear()
        _SEEN[key] = _validate(model, known)
    return _SEEN[key]


_SEEN: dict[tuple[type[Options], str], tuple[str, str] | None] = {}
_NAMES: dict[type[Options], frozenset[str]] = {}


def _validate(model: type[Options], known: dict[str, Any]) -> tuple[str, str] | None:
    try:
        model.model_validate(known)
    except ValidationError as exc:
        key, msg = first_error(exc, model)
        return key or "?", msg if raised_by_validator(exc) else f"{key}: {msg}"
    return None


class FieldType(ABC):
    """One field type. Subclasses set the class attributes and the reading methods; the
    registry makes one instance per type. `opts` is the field's options dict (already
    checked against `Options`), passed whole so readers may keep per-field tables in it."""

    name: ClassVar[str]
    doc: ClassVar[str]  # one line for the docs
    noun: ClassVar[str]  # what a value is, in a sentence: "the gold 'x' is not an amount"
    rules: ClassVar[str]  # the scoring rules, Markdown, for docs/field-types.md
    subcodes: ClassVar[tuple[str, ...]]
    typed: ClassVar[bool] = False  # a value with a shape (digits): refusal prefixes and "no value" sentences apply
    Options: ClassVar[type[Options]] = Options
    unparseable: ClassVar[str | None] = None  # sub-code of a value-like answer with no candidate
    parts: ClassVar[tuple[str, ...]] = ()  # parts a value may lack; candidates never fill them in
    partial_examples: ClassVar[tuple[tuple[str, str], ...]] = ()  # (answer, the part it does not give)
    examples: ClassVar[dict[str, tuple[Example, ...]]] = {}  # sub-code -> pairs that earn it
    golds: ClassVar[tuple[tuple[str, dict[str, Any]], ...]] = ()  # golds that read, for the round-trip test
    gold_options: ClassVar[tuple[str, ...]] = ()  # the options reading a gold depends on
    hint: ClassVar[str]  # how a prompt asks for a value: "an amount with its currency"
    # how the scorer reads an answer of this type (the defaults suit most types):
    quotes_document: ClassVar[bool] = False  # a value may quote the document: copied lines are no dropped field
    sign_in_words: ClassVar[bool] = False  # "the amount is negative" makes a positive value negative
    nonscalar: ClassVar[str | None] = None  # sub-code of a JSON object or nested list given as the value
    dates_are_values: ClassVar[bool] = False  # a date in a sentence may be (a wrong) value of this type
    needs_digit: ClassVar[bool] = False  # a clause with no digit holds none of its values

    @abstractmethod
    def candidates(self, s: str, opts: dict[str, Any]) -> list[Any]:
        """The distinct values of this type in `s` (the scorer's fast path)."""

    def find(self, s: str, opts: dict[str, Any]) -> list[Found]:
        """Every value mention in `s` with its span in `s`. By default one value read from
        the whole string."""
        start, end = stripped(s)
        return [Found(start, end, c) for c in self.candidates(s, opts)]

    def gold(self, s: str, opts: dict[str, Any]) -> Any | None:
        """The gold's one value, or None when the reference is not a value of this type."""
        cands = self.candidates(s, opts)
        return cands[0] if len(cands) == 1 else None

    def gold_key(self, opts: dict[str, Any]) -> Hashable | None:
        """What of `opts` reading a gold depends on, for the gold cache; None: do not cache."""
        names = self.gold_options
        if len(names) == 1:
            return ((names[0], opts.get(names[0])),)
        return tuple([(k, opts.get(k)) for k in names])

    def fmt(self, value: Any) -> str:
        """A value as the scorer shows it (gold_norm, pred_norm)."""
        return str(value)

    def compare(self, gold: Any, cand: Any, opts: dict[str, Any]) -> Verdict:
        return ("correct", None, None) if gold == cand else ("wrong_value", None, None)

    def part_values(self, value: Any) -> dict[str, Any]:
        """Each of `parts` in a value (None where the value does not give it)."""
        return {}

    def canonical_options(self, opts: dict[str, Any]) -> dict[str, Any]:
        """The options `fmt`'s output reads back under (fmt writes one canonical form)."""
        return opts

    @classmethod
    def option_problem(cls, options: dict[str, Any]) -> tuple[str, str] | None:
        return option_error(cls.Options, options)

    @classmethod
    def user_options(cls) -> tuple[str, ...]:
        """The options a config may set for this type."""
        return tuple(sorted(set(cls.Options.model_fields) - INTERNAL_OPTIONS))

    def says_absent(self, s: str, opts: dict[str, Any]) -> bool:
        """Does `s` (a gold or an answer) say there is no value? A typed answer that starts with
        a marker and has no digit ("Not found in the document.") does."""
        return is_absent(s, prefix_rule=self.typed)

    def states_no_value(self, s: str) -> bool:
        """A sentence (more than three words) where no token could even be a damaged value of
        the type: none starts with a digit once dates are masked (unless dates are values of
        the type). "Exporter: Kestrel Optics GmbH, EORI DE1234567890123" states no amount (its
        digits belong to an id), while "The total is 14,851.2O" states a damaged one."""
        if word_count(s) <= 3:
            return False
        t = prep(s)
        return not _VALUE_START.search(t if self.dates_are_values else mask_dates(t))

    def read_gold(self, s: str, opts: dict[str, Any]) -> Any | None:
        """`gold`, cached where `gold_key` allows: references repeat across runs and models."""
        key = self.gold_key(opts)
        if key is None or len(s) > 256:
            return self.gold(s, opts)
        return _gold_cached(self, s, key)

    def gold_accepted(self, value: Any, opts: dict[str, Any]) -> bool:
        """May a pack's gold be this value (read by `gold`)? Checked before a run."""
        return True

    def reading_options(self, opts: dict[str, Any], answer: str, document: str | None) -> dict[str, Any]:
        """The options an answer is read with, where the answer (or else the document) settles
        what the options leave open; the gold is read with `opts` as written."""
        return opts

    def locale_defaults(self, opts: dict[str, Any], locale: str) -> dict[str, Any]:
        """The options a `locale` decides for this type where `opts` do not give them."""
        return {}

    def with_locale(self, options: dict[str, Any], locale: str | None) -> dict[str, Any]:
        """The options with `locale` set and what it decides written out (`locale_defaults`), so
        any reader, old or new, reads the field the same way."""
        if locale is None:
            return options
        out = {**options, "locale": locale}
        return {**out, **self.locale_defaults(out, locale)}

    def whole_answer(self, answer: str) -> Any | None:
        """The answer read whole as one value, before any token is looked at; None: read by tokens."""
        return None

    def offered_in_prose(self, text: str, opts: dict[str, Any], asked: Names) -> bool | None:
        """Is a value given for the field in prose (True), are all values about other things
        (False), or can the prose not tell (None)?"""
        return None

    def offers_in_words(self, answer: str, opts: dict[str, Any], asked: Names) -> bool | None:
        """For a type whose values are words: does an answer with no value read still offer one?
        None for a type whose values have a shape (their digits tell)."""
        return None

    def in_asked_unit(self, text: str, opts: dict[str, Any], asked: Names) -> Any | None:
        """Of several values, the one written in the unit the question asks for; None: none chosen."""
        return None


_VALUE_START = re.compile(r"(?<![\w\-/.])[-+\u2212(]?[$€£¥]?[0-9]")


@lru_cache(maxsize=65536)
def _gold_cached(t: FieldType, gold: str, key: Hashable) -> Any:
    return t.gold(gold, dict(key))  # type: ignore[call-overload]
