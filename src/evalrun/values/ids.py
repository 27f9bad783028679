"""Ids (invoice numbers, VAT ids, IBANs): normalised whole, or picked out of prose."""

from __future__ import annotations

import re
from functools import lru_cache

from evalrun.values.amounts import AMOUNT_RE
from evalrun.values.currencies import ISO_CODES
from evalrun.values.dates import find_dates
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.text import CACHE_MAX_LEN, HAS_DIGIT, prep

_ID_DROP = re.compile(r"[\s\-._/]+")
_ID_EDGE = ".,;:!?#'\"“”‘’()[]{}<>*`« »\t\r\n"
_ID_TOKEN = re.compile(r"[^\s,;:()\[\]{}<>\"“”‘’«»|*`]+")
_ID_LABELS = frozenset("ID PO VAT IBAN BIC SWIFT REF NO NR TAX EIN SSN UID OK".split()) | frozenset(ISO_CODES)


def norm_id(s: str) -> str:
    """Uppercase; spaces and - . / _ dropped; edge quotes, brackets and '#' too."""
    return _ID_DROP.sub("", prep(s).strip(_ID_EDGE).upper())


_GLUE = re.compile(r"[\w\-/.]")


def _mask_non_ids(t: str) -> str:
    """Blank dates and amounts that stand alone; spans glued to id characters ("INV-2024-03-14-7") stay."""
    spans = [(s, e) for s, e, _ in find_dates(t)]
    for m in AMOUNT_RE.finditer(t):
        if m["c1"] or m["c2"] or m["pct"] or "," in m["num"]:
            spans.append(m.span())
    if not spans:
        return t
    chars = list(t)
    for s, e in spans:
        if (s > 0 and _GLUE.match(t, s - 1)) or (e < len(t) and t[e] not in ".,;:!?" and _GLUE.match(t, e)):
            continue
        chars[s:e] = " " * (e - s)
    return "".join(chars)


def _idish(tok: str, free: bool) -> bool:
    """Can a token be part of an id: a digit; in prose a short all-caps code; in a bare value any code; no label."""
    if HAS_DIGIT.search(tok):
        return True
    if not tok.isalnum() or tok.upper() in _ID_LABELS:
        return False
    return not free or (len(tok) <= 5 and tok.isupper())


def _is_prose(tokens: list[str]) -> bool:
    """Prose has a real word: one of 4+ letters, or two shorter ones ("inv 2024" is a value)."""
    words = [tok for tok in tokens if len(tok) >= 2 and tok.isalpha() and not tok.isupper()]
    return len(words) >= 2 or any(len(w) >= 4 for w in words)


def _id_found(text: str) -> tuple[bool, tuple[tuple[int, int, str], ...]]:
    """(is_free_text, (start, end, normalised candidate) in prep(text))."""
    t = mask_list_markers(prep(text))
    matches = list(_ID_TOKEN.finditer(t))[:2000]
    tokens = [m[0].strip(_ID_EDGE) for m in matches]
    if len(tokens) <= 1:
        return False, _whole(t)
    free = _is_prose(tokens)
    if free:  # dates and amounts in a multi-field answer are not ids
        masked = _mask_non_ids(t)
        if masked != t:
            t = masked
            matches = list(_ID_TOKEN.finditer(t))[:2000]
            tokens = [m[0].strip(_ID_EDGE) for m in matches]
    # Runs of id-ish tokens separated only by spaces form one id ("INV 2024 0042");
    # a run counts when it holds a digit.
    cands: list[tuple[int, int, str]] = []
    run: list[str] = []
    run_start = run_end = 0
    prev_end, prev_raw = -1, ""
    for m, tok in zip(matches, tokens):
        joined = prev_end >= 0 and not t[prev_end:m.start()].strip() and not prev_raw.endswith((".", "!", "?"))
        idish = bool(tok) and _idish(tok, free)
        if not (idish and joined and run):
            if run and any(HAS_DIGIT.search(r) for r in run):
                cands.append((run_start, run_end, norm_id(" ".join(run))))
            run = []
        if idish:
            if not run:
                run_start = m.start() + m[0].index(tok)
            run.append(tok)
            run_end = m.start() + m[0].index(tok) + len(tok)
        prev_end, prev_raw = m.end(), m[0]
    if run and any(HAS_DIGIT.search(r) for r in run):
        cands.append((run_start, run_end, norm_id(" ".join(run))))
    if free:  # a count in prose ("3 items") is not an id
        cands = [c for c in cands if len(c[2]) >= 3]
    if not cands and not free:
        return False, _whole(t)
    if not cands:  # no digits anywhere: fall back to all-caps codes ("ABCDEF")
        cands = [(m.start() + m[0].index(tok), m.start() + m[0].index(tok) + len(tok), norm_id(tok))
                 for m, tok in zip(matches, tokens)
                 if len(tok) >= 3 and tok.isupper() and tok.isalnum() and tok not in _ID_LABELS]
    return free, tuple(c for c in cands if c[2])


_LATIN_OR_DIGIT = re.compile(r"[0-9A-Za-z]")


def _whole(t: str) -> tuple[tuple[int, int, str], ...]:
    """The whole value as one id; ids are Latin letters and digits, so kana or ideograph babble is none."""
    whole = norm_id(t)
    if not whole or not _LATIN_OR_DIGIT.search(whole):
        return ()
    body = t.strip()
    start = len(t) - len(t.lstrip())
    return ((start, start + len(body), whole),)


def _id_candidates(text: str) -> tuple[bool, tuple[str, ...]]:
    free, found = _id_found(text)
    return free, tuple(c for _, _, c in found)


_id_candidates_cached = lru_cache(maxsize=65536)(_id_candidates)


def id_candidates(text: str) -> tuple[bool, tuple[str, ...]]:
    """(is_free_text, normalised candidates): runs of id-ish tokens ("ID: DE 1234 5678" -> DE12345678), else a
    value with no prose words whole, else all-caps codes; in prose dates and amounts masked, short ones dropped."""
    return _id_candidates(text) if len(text) > CACHE_MAX_LEN else _id_candidates_cached(text)


def id_spans(text: str) -> tuple[bool, tuple[tuple[int, int, str], ...]]:
    """As id_candidates, with each candidate's (start, end) in prep(text)."""
    return _id_found(text)
