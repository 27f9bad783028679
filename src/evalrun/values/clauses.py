"""An answer's clauses, and whether one names a field (every word of its name or an alias, either number)."""

from __future__ import annotations

import re
from typing import Any

from evalrun.values.currencies import currency_code
from evalrun.values.dates import MONTH_NAMES
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.text import prep

_SENT_END = re.compile(r"[.!?]+[\"'”’)\]]*\s+")
_NOT_A_SENTENCE_END = frozenset(
    "no nr mr mrs ms dr st vs approx ca eg ie e.g i.e ref inv art sec fig pp vol".split()
) | MONTH_NAMES
_FINE = re.compile(r",?\s+(?:but|however|although|though|whereas|while|yet|and|except),?\s+|,\s+", re.I)
_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
_COPULA = re.compile(r"\s(?:is|are|was|were|amounts to|comes to)\s|[:=]")

Names = tuple[frozenset[str], ...]  # the word sets of a field's name and of each alias


def _currency_before_number(word: str, line: str, m: re.Match[str]) -> bool:
    """Is the dot that of a currency ("Rs.", "Fr.", "kr.") before its amount, not after one ("5 kr. 20 were sold")?"""
    if m.group().strip() != "." or not line[m.end():m.end() + 1].isdigit() or currency_code(f"{word}.") is None:
        return False
    before = line[:m.start() - len(word)].rstrip()
    return not before[-1:].isdigit()


def _sentences(line: str) -> list[str]:
    out, start = [], 0
    for m in _SENT_END.finditer(line):
        nxt = line[m.end():m.end() + 12]
        before = line[start:m.start()].rsplit(None, 1)
        written = before[-1].strip("(\"'“‘") if before else ""
        word = written.lower()
        nxt_word = (nxt.split() or [""])[0].strip(",.").lower()
        if (not nxt or nxt[0].islower() or word in _NOT_A_SENTENCE_END or len(word) == 1
                or nxt_word in MONTH_NAMES or _currency_before_number(written, line, m)):
            continue  # "Mar. 14", "No. 5", "J. Smith", "14. März", "Rs. 1,20,000": no sentence ends here
        out.append(line[start:m.end()])
        start = m.end()
    out.append(line[start:])
    return out


def split_clauses(text: str, fine: bool = False) -> list[str]:
    """Lines, ';'-parts and sentences, list markers blanked; `fine`: also comma and conjunction parts."""
    out: list[str] = []
    for line in mask_list_markers(prep(text)).splitlines():
        for part in line.split(";"):
            for sentence in _sentences(part):
                out.extend(_FINE.split(sentence) if fine else (sentence,))
    return [c for c in (c.strip() for c in out) if c]


def singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us")):
        return word[:-1]
    return word


def _name_words(name: str) -> frozenset[str]:
    return frozenset(singular(w) for w in re.split(r"[\s_\-]+", name.casefold()) if w)


def field_names(field: Any, aliases: Any = None) -> Names:
    """The field's name (`field`) and `aliases` as word sets; empty when the scorer was not told the field."""
    names = []
    if isinstance(field, str) and field.strip():
        names.append(_name_words(field))
    aliases = aliases or ()
    for alias in [aliases] if isinstance(aliases, str) else aliases:
        if isinstance(alias, str) and alias.strip():
            names.append(_name_words(alias))
    return tuple(n for n in names if n)


def words(clause: str) -> list[str]:
    """The clause's words, casefolded and singular; a hyphenated word is one word."""
    return [singular(w) for w in _WORD.findall(clause.casefold())]


def names_field(clause: str, names: Names) -> bool:
    toks = _WORD.findall(clause.casefold())
    for name in names:
        seen: set[str] = set()
        for tok in toks:
            parts = [singular(p) for p in tok.split("-")]
            seen.add(singular(tok))
            if len(parts) > 1 and all(p in name for p in parts):
                seen.update(parts)  # "due-date" names due_date; "sub-total" does not name total
        if name <= seen:
            return True
    return False


def subject(clause: str, whole: bool) -> str:
    """What a value clause is about: the words before "is"/":", else the whole clause when `whole` (typed values)
    or nothing (a text value is its clause)."""
    m = _COPULA.search(f" {clause} ")
    if m:
        return f" {clause} "[: m.start()]
    return clause if whole else ""
