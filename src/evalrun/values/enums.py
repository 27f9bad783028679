"""Enum values: the allowed names and synonyms, found as whole words in an answer."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from evalrun.values.currencies import ISO_CODES, SHARED, currency_mentions_at
from evalrun.values.text import norm_text

_NEGATIONS = frozenset("not no never non isnt arent wasnt werent dont doesnt didnt".split())


def find_enum_values(norm_pred: str, lookup: dict[str, str]) -> list[str]:
    """Canonical values named as whole words in the normalised answer, negated mentions ("not paid") skipped;
    longer names match first and claim their words ("canadian dollars" is not also "dollars")."""
    padded = f" {norm_pred} "
    found: dict[str, int] = {}  # canonical value -> where it is first named
    taken = bytearray(len(padded))  # 1 where a longer name already read sits: linear in the answer
    for name in sorted(lookup, key=len, reverse=True):
        if not name:
            continue
        canon = lookup[name]
        start = 0
        needle = f" {name} "
        while (i := padded.find(needle, start)) != -1:
            a, b = i + 1, i + len(needle) - 1
            start = i + 1
            if any(taken[a:b]):
                continue  # inside a longer name already read
            taken[a:b] = b"\x01" * (b - a)
            prev = padded[padded.rfind(" ", 0, max(i - 1, 0)) + 1:i].strip()  # the word before the name
            if prev not in _NEGATIONS:
                found[canon] = min(found.get(canon, i), i)
    return sorted(found, key=found.__getitem__)


EnumTable = tuple[dict[str, str], frozenset[str] | None]  # name or synonym -> canonical value; the allowed set


def _number_variant(name: str) -> str | None:
    """The name with its last word in the other number ("us dollar" <-> "us dollars"); None where "s" is no plural."""
    head, _, last = name.rpartition(" ")
    if len(last) < 3 or not last.isalpha():
        return None
    if last.endswith("s"):
        if len(last) < 4 or last.endswith(("ss", "us", "is")):
            return None
        other = last[:-1]
    else:
        other = last + "s"
    return f"{head} {other}" if head else other


@lru_cache(maxsize=1024)
def _enum_table(allowed: tuple[str, ...] | None, synonyms: tuple[tuple[str, str], ...]) -> EnumTable:
    lookup: dict[str, str] = {}
    allowed_set = frozenset(norm_text(a) for a in allowed) if allowed is not None else None
    for a in allowed_set or ():
        lookup[a] = a
    for k, v in synonyms:
        lookup.setdefault(norm_text(k), norm_text(v))
    for name, canon in list(lookup.items()):  # spelled names only: a written entry always wins
        if (variant := _number_variant(name)) is not None and len(name) > 3:
            lookup.setdefault(variant, canon)
    return lookup, allowed_set


_ISO = frozenset(ISO_CODES)


def _currency_mentions(s: str, allowed: frozenset[str] | None, lookup: dict[str, str]) -> list[str]:
    """In a currency field (every allowed value an ISO code) another ISO code in capitals is a second value, and
    a symbol names the allowed currency it stands for ("$" only when one allowed currency uses it)."""
    if not allowed or not all(a.upper() in _ISO for a in allowed):
        return []
    out: list[str] = []
    for at, tok, cur in currency_mentions_at(s, words=True):
        if tok[:1].isalpha() and not (len(tok) == 3 and tok.isupper()):  # a name in words
            if norm_text(tok) in lookup or (norm_text(s[max(0, at - 12):at]).split()[-1:] or [""])[0] in _NEGATIONS:
                continue  # the field's own name or synonym (read, negations and all, above), or "not in euros"
        if len(tok) == 3 and tok.isupper() and tok.isalpha():  # a code in capitals: a value, allowed or not
            code: str | None = cur
        else:  # a symbol: the allowed currency it stands for, if only one
            members = [m for m in SHARED.get(cur, {cur}) if m.lower() in allowed]
            code = members[0] if len(members) == 1 else None
        if code is not None and code.lower() not in out:
            out.append(code.lower())
    return out


def enum_lookup(allowed: Any, synonyms: Any = None) -> EnumTable:
    """(normalised name or synonym -> canonical value, the allowed set or None); EnumOptions.table keeps it."""
    return _enum_table(tuple(str(a) for a in allowed) if allowed is not None else None,
                       tuple(sorted((str(k), str(v)) for k, v in dict(synonyms or {}).items())))


def enum_candidates(s: str, table: EnumTable) -> list[str]:
    """The canonical values named: the whole answer when it is a name, else (with `allowed`) each one not negated."""
    lookup, allowed = table
    n = norm_text(s)
    if n in lookup:
        return [lookup[n]]
    if allowed is None:
        return [n] if n else []
    named = find_enum_values(n, lookup)
    return named + [c for c in _currency_mentions(s, allowed, lookup) if c not in named]
