"""What a field type is: one class per file in this folder, found by the registry.

A type reads golds and answers, compares values and owns its options model and sub-codes;
the scorer and the packs that check golds before a run both go through it, so they never disagree.
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC
from collections.abc import Hashable
from functools import cached_property, lru_cache
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalrun.contract.validation import first_error, raised_by_validator
from evalrun.values.clauses import Names, field_names
from evalrun.values.dates import mask_dates
from evalrun.values.locales import locale_problem
from evalrun.values.text import CACHE_MAX_LEN, is_absent, prep, word_count

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


# where a value found in prepared text sits in the answer as written: spans point at the model's own text
def _offsets(s: str) -> tuple[int, ...] | None:
    """For each index of prep(s) (and its end), the index in `s` it came from; None when
    NFKC joins across the clusters used here (a base letter and its combining marks)."""
    if s.isascii():
        return None
    out: list[int] = []
    i = 0
    while i < len(s):
        j = i + 1
        while j < len(s) and unicodedata.combining(s[j]):
            j += 1
        out.extend([i] * len(unicodedata.normalize("NFKC", s[i:j])))
        i = j
    if len(out) != len(prep(s)):
        return (-1,)
    out.append(len(s))
    return tuple(out)


_offsets_cached = lru_cache(maxsize=4096)(_offsets)
# an answer's every span maps through one table: a long one is kept too (a few, so that
# megabytes are never pinned), or each span would rebuild it and the answer cost n * spans
_offsets_long = lru_cache(maxsize=4)(_offsets)


def to_original(s: str, start: int, end: int) -> tuple[int, int]:
    """(start, end) in `s` of the span (start, end) of prep(s). Where NFKC cannot be undone
    cluster by cluster (Hangul jamo, rare), the span is the whole answer."""
    table = _offsets_cached(s) if len(s) <= CACHE_MAX_LEN else _offsets_long(s)
    if table is None:
        return start, end
    if table == (-1,):
        return 0, len(s)
    end_at = table[end] if end < len(table) else len(s)
    if end > 0 and end < len(table) and table[end] == table[end - 1]:
        end_at = next((k for k in table[end:] if k != table[end - 1]), len(s))
    return table[start], end_at


def stripped(s: str) -> tuple[int, int]:
    """The span of `s` without its surrounding whitespace (a value read from the whole answer)."""
    body = s.strip()
    if not body:
        return 0, 0
    start = len(s) - len(s.lstrip())
    return start, start + len(body)


class Options(BaseModel):
    """The options every field type reads; validated once per field, then read by attribute."""

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
        if v is not None and not isinstance(v, str) and not (
                isinstance(v, (list, tuple)) and all(isinstance(a, str) for a in v)):
            raise ValueError(f"aliases must be a list of names; got {v!r}")
        return v

    @cached_property
    def names(self) -> Names:
        """The field's name and aliases as word sets (clauses.field_names)."""
        return field_names(self.field, self.aliases)


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


def _checked(model: type[Options], options: dict[str, Any]) -> Options | tuple[str, str]:
    """The options of `model` in `options` as the model, or (option, what is wrong). Cached by their
    repr: the scorer gets the same options on every call of a field, and the model keeps its tables."""
    known = {k: v for k, v in options.items() if k in model.model_fields}
    try:
        text = repr(known)
    except Exception:  # noqa: BLE001 - an unprintable value is checked uncached
        text = ""
    if not 0 < len(text) <= 4096:
        return _validate(model, known)
    key = (model, text)
    if key not in _SEEN:
        if len(_SEEN) >= 4096:
            _SEEN.clear()
        _SEEN[key] = _validate(model, known)
    return _SEEN[key]


_SEEN: dict[tuple[type[Options], str], Options | tuple[str, str]] = {}


def _validate(model: type[Options], known: dict[str, Any]) -> Options | tuple[str, str]:
    try:
        return model.model_validate(known)
    except ValidationError as exc:
        key, msg = first_error(exc, model)
        return key or "?", msg if raised_by_validator(exc) else f"{key}: {msg}"


O = TypeVar("O", bound=Options)


class FieldType(ABC, Generic[O]):
    """One field type (one instance each); readers take the options as the type's model, validated once per field."""

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

    def candidates(self, s: str, opts: O) -> list[Any]:
        """The distinct values of this type in `s` (the scorer's fast path); a type overrides this or `find`."""
        return list(dict.fromkeys(f.value for f in self.find(s, opts)))

    def find(self, s: str, opts: O) -> list[Found]:
        """Every value mention in `s` with its span; by default one value read from the whole string."""
        start, end = stripped(s)
        return [Found(start, end, c) for c in self.candidates(s, opts)]

    def gold(self, s: str, opts: O) -> Any | None:
        """The gold's one value, or None when the reference is not a value of this type."""
        cands = self.candidates(s, opts)
        return cands[0] if len(cands) == 1 else None

    def gold_key(self, opts: O) -> Hashable | None:
        """What of `opts` reading a gold depends on, for the gold cache; None: do not cache."""
        return tuple([(k, getattr(opts, k)) for k in self.gold_options])

    def fmt(self, value: Any) -> str:
        """A value as the scorer shows it (gold_norm, pred_norm)."""
        return str(value)

    def compare(self, gold: Any, cand: Any, opts: O) -> Verdict:
        return ("correct", None, None) if gold == cand else ("wrong_value", None, None)

    def part_values(self, value: Any) -> dict[str, Any]:
        """Each of `parts` in a value (None where the value does not give it)."""
        return {}

    def canonical_options(self, opts: O) -> O:
        """The options `fmt`'s output reads back under (fmt writes one canonical form)."""
        return opts

    @classmethod
    def option_problem(cls, options: dict[str, Any]) -> tuple[str, str] | None:
        """(option, what is wrong) for the first option of the type that cannot be read; other keys unjudged."""
        checked = _checked(cls.Options, options)
        return checked if isinstance(checked, tuple) else None

    def options(self, options: dict[str, Any]) -> O:
        """A field's options dict as this type's model; ValueError naming a bad option (a harness bug).
        Keys that are no option of the type are ignored, so a field's dict may carry other metadata."""
        checked = _checked(self.Options, options)
        if isinstance(checked, tuple):
            raise ValueError(f"option {checked[0]}: {checked[1]}")
        return cast(O, checked)

    @classmethod
    def user_options(cls) -> tuple[str, ...]:
        """The options a config may set for this type."""
        return tuple(sorted(set(cls.Options.model_fields) - INTERNAL_OPTIONS))

    def says_absent(self, s: str, opts: O) -> bool:
        """Does `s` say there is no value? A typed answer starting with a marker and with no digit does."""
        return is_absent(s, prefix_rule=self.typed)

    def states_no_value(self, s: str) -> bool:
        """A sentence (4+ words) where no token could even be a damaged value: none starts with a digit (dates
        masked unless they are values): "..., EORI DE1234567890123" states no amount, "... 14,851.2O" a damaged one."""
        if word_count(s) <= 3:
            return False
        t = prep(s)
        return not _VALUE_START.search(t if self.dates_are_values else mask_dates(t))

    def read_gold(self, s: str, opts: O) -> Any | None:
        """`gold`, cached where `gold_key` allows: references repeat across runs and models."""
        key = self.gold_key(opts)
        if key is None or len(s) > 256:
            return self.gold(s, opts)
        cache = (self, s, key)
        if cache not in _GOLDS:
            if len(_GOLDS) >= 65536:
                _GOLDS.clear()
            _GOLDS[cache] = self.gold(s, opts)
        return _GOLDS[cache]

    def gold_accepted(self, value: Any, opts: O) -> bool:
        """May a pack's gold be this value (read by `gold`)? Checked before a run."""
        return True

    def reading_options(self, opts: O, answer: str, document: str | None) -> O:
        """The options an answer is read with, where it (else the document) settles what they leave open."""
        return opts

    def locale_defaults(self, opts: O, locale: str) -> dict[str, Any]:
        """The options a `locale` decides for this type where `opts` do not give them."""
        return {}

    def with_locale(self, options: dict[str, Any], locale: str | None) -> dict[str, Any]:
        """The options with `locale` and what it decides written out, so any reader reads the field the same way."""
        if locale is None:
            return options
        out = {**options, "locale": locale}
        return {**out, **self.locale_defaults(self.options(out), locale)}

    def whole_answer(self, answer: str) -> Any | None:
        """The answer read whole as one value, before any token is looked at; None: read by tokens."""
        return None

    def offered_in_prose(self, text: str, opts: O, asked: Names) -> bool | None:
        """Is a value given for the field in prose (True), are all about other things (False), or can it not tell?"""
        return None

    def offers_in_words(self, answer: str, opts: O, asked: Names) -> bool | None:
        """Does an answer with no value read still offer one (words types); None where digits tell."""
        return None

    def in_asked_unit(self, text: str, opts: O, asked: Names) -> Any | None:
        """Of several values, the one written in the unit the question asks for; None: none chosen."""
        return None


_VALUE_START = re.compile(r"(?<![\w\-/.])[-+\u2212(]?[$€£¥]?[0-9]")
_GOLDS: dict[tuple[FieldType[Any], str, Hashable], Any] = {}
