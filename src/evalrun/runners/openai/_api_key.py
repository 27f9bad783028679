"""An API key: checked when it is read, and kept out of every message in every form it can take.

A key copied from a file often ends in a newline, and an HTTP client then reports the header it refused to
send, key included. A server may echo it quoted (repr, JSON), URL-encoded or base64-encoded (Basic
authentication), so scrubbing only the raw key is not enough. The keys read in this process are remembered
so that the command line can scrub whatever it prints last.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import threading
import unicodedata
from typing import Iterable
from urllib.parse import quote, quote_plus

MASK = "***"
# a value shorter than this is a setting ("0", "bf16", "auto"), never a credential: masking it would mangle answers
SECRET_MIN_CHARS = 8

_known: set[str] = set()
_lock = threading.Lock()


def key_problem(key: str) -> str | None:
    """What makes `key` unusable in an Authorization header, in words that never quote it; None when fine."""
    if not key:
        return "it is empty"
    for i, ch in enumerate(key):
        where = "at its end" if i == len(key) - 1 else "at its start" if i == 0 else f"at character {i + 1}"
        if ch in "\r\n":
            return f"it has a line break {where} (a file read with its trailing newline?)"
        if ch.isspace():
            return f"it has whitespace {where}"
        if unicodedata.category(ch).startswith("C"):
            return f"it has a control character {where}"
        if not ch.isascii():
            return f"it has a non-ASCII character {where}"
    return None


def _base64_runs(key: bytes) -> set[str]:
    """The base64 text that `key` becomes inside any encoded message: at each of the three
    alignments, the 4-character groups made of the key's bytes alone (standard and URL-safe)."""
    out: set[str] = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + key).decode()
        first = -(-offset // 3)  # the first group that holds key bytes only
        last = (offset + len(key)) // 3  # groups before this one are complete
        run = encoded[4 * first:4 * last]
        if len(run) >= 8:
            out |= {run, run.replace("+", "-").replace("/", "_")}
    return out


@functools.lru_cache(maxsize=16)
def key_forms(key: str) -> tuple[str, ...]:
    """Every form of `key` worth removing, longest first (so a form that contains another goes whole)."""
    raw = key.encode("utf-8", "surrogatepass")
    forms = {key, repr(key)[1:-1], repr(raw)[2:-1], json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1],
             quote(key, safe=""), quote(key), quote_plus(key), key.strip()}
    forms |= _base64_runs(raw)
    return tuple(sorted((f for f in forms if f), key=len, reverse=True))


def scrub(text: str, keys: set[str] | list[str] | tuple[str, ...]) -> str:
    """`text` with every form of every key replaced by ***."""
    for key in keys:
        if not key:
            continue
        for form in key_forms(key):
            text = text.replace(form, MASK)
    return text


def remember(key: str) -> None:
    """A key this process holds: `scrub_known` removes it from anything printed from now on."""
    if key:
        with _lock:
            _known.add(key)


def remember_secrets(values: Iterable[str]) -> None:
    """Values that may be credentials (a server's `env`): those of SECRET_MIN_CHARS or more are remembered."""
    for value in values:
        if len(value) >= SECRET_MIN_CHARS:
            remember(value)


def scrub_known(text: str) -> str:
    """`text` without any key this process has read."""
    with _lock:
        keys = tuple(_known)
    return scrub(text, keys) if keys else text


# a conventional variable name: words of capitals and digits joined by _ (or all lower case), short words
_VARIABLE = re.compile(r"_?(?:[A-Z][A-Z0-9]{0,11}|[a-z][a-z0-9]{0,11})(?:_(?:[A-Z0-9]{1,12}|[a-z0-9]{1,12}))*_?")


def readable_variable(name: str) -> bool:
    """Whether `name` reads as a variable's name (VLLM_API_KEY) rather than a pasted key: only such a
    name is quoted in a message."""
    return len(name) <= 48 and _VARIABLE.fullmatch(name) is not None


def variable_words(name: str) -> str:
    """The variable `api_key_env` names, as a message says it: by name, or (a name that could be a key) not."""
    if readable_variable(name):
        return f"environment variable {name}"
    return ("the environment variable openai.api_key_env names (its name is not shown: it does not read like a "
            "variable name; api_key_env takes the NAME of the variable that holds the key, never the key)")
