"""A model's JSON answer read in a fixed order, recording how: strict -> fenced (```json or the first balanced
{...}) -> repaired (_json_repair) -> truncated (open strings and brackets closed; `suspect_key` names the value
that may be cut) -> failed. A truncated answer needs one member ("I think {" fails). Never raises."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalrun.evals.scoring._json_repair import rewrite

ParseStatus = Literal["strict", "fenced", "repaired", "truncated", "failed"]
PARSE_STATUSES: tuple[str, ...] = ("strict", "fenced", "repaired", "truncated", "failed")


class JsonAnswer(BaseModel):
    """A parsed answer: how it was read, the object, and the possibly cut key."""

    model_config = ConfigDict(extra="forbid")

    status: ParseStatus
    data: dict[str, Any] | None = None
    suspect_key: str | None = None


_FENCE = re.compile(r"```[ \t]*(?:json5?|javascript|js)?[ \t]*\r?\n?(.*?)```", re.S | re.I)
_STRUCT = re.compile(r"""[{}"'\\]""")
_MAX_CANDIDATES = 20
_MAX_REPAIRS = 4


def _loads(s: str, strict: bool = True) -> dict[str, Any] | None:
    try:
        v = json.loads(s, strict=strict)
    except Exception:  # noqa: BLE001 - ValueError, RecursionError, MemoryError...
        return None
    return v if isinstance(v, dict) else None


def _scan_braces(text: str) -> tuple[list[tuple[int, int]], int | None]:
    """Outermost balanced {...} spans in order, and the first '{' never closed; nested objects are left out (a
    truncated answer's inner object is no answer). Quotes are tracked only inside braces, so prose cannot derail."""
    stack: list[int] = []
    pairs: list[tuple[int, int]] = []
    quote, skip = "", -1
    for m in _STRUCT.finditer(text):
        i, c = m.start(), m.group()
        if i < skip:
            continue
        if quote:
            if c == "\\":
                skip = i + 2
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c if stack else ""
        elif c == "{":
            stack.append(i)
        elif c == "}" and stack:
            start = stack.pop()
            if not stack:  # only outermost objects: an inner one is not the answer
                pairs.append((start, i + 1))
    pairs.sort()
    return pairs, (stack[0] if stack else None)


# ---------------------------------------------------------------- the stages


def _parse(text: str) -> JsonAnswer:
    stripped = text.strip().lstrip("\ufeff")
    data = _loads(stripped)
    if data is not None:
        return JsonAnswer(status="strict", data=data)
    try:  # a double-encoded answer: "{\"a\": 1}"
        inner = json.loads(stripped) if stripped.startswith('"') else None
    except Exception:  # noqa: BLE001
        inner = None
    if isinstance(inner, str) and (data := _loads(inner.strip())) is not None:
        return JsonAnswer(status="repaired", data=data)

    fences = [m.group(1).strip() for m in _FENCE.finditer(text)][:_MAX_CANDIDATES]
    for block in fences:
        if (data := _loads(block)) is not None:
            return JsonAnswer(status="fenced", data=data)
    pairs, unclosed = _scan_braces(text)
    for a, b in pairs[:_MAX_CANDIDATES]:
        if (data := _loads(text[a:b])) is not None:
            return JsonAnswer(status="fenced", data=data)

    repair_candidates = fences[:_MAX_REPAIRS] + [text[a:b] for a, b in pairs[:_MAX_REPAIRS]] + [stripped]
    for cand in repair_candidates:
        if "{" not in cand:
            continue
        fixed, _, _ = rewrite(cand[cand.index("{"):], complete=False)
        if fixed and (data := _loads(fixed, strict=False)) is not None:
            return JsonAnswer(status="repaired", data=data)

    start = unclosed
    if start is None and "{" in text:  # e.g. cut inside a single-quoted string
        start = text.index("{")
    if start is not None:
        tail = text[start:]
        fence_end = tail.find("```")
        if fence_end > 0:
            tail = tail[:fence_end]
        fixed, suspect, alternatives = rewrite(tail, complete=True)
        # An empty object ("I think {") is not an answer, hence the truthiness tests.
        if (data := _loads(fixed, strict=False)) and _is_open(tail):
            return JsonAnswer(status="truncated", data=data, suspect_key=suspect)
        for alt in alternatives:
            if (data := _loads(alt, strict=False)) and _is_open(tail):
                return JsonAnswer(status="truncated", data=data, suspect_key=None)
    return JsonAnswer(status="failed")


def _is_open(tail: str) -> bool:
    """Did the text really stop inside the object (rather than being garbage)?"""
    fixed, _, _ = rewrite(tail, complete=False)
    return not fixed or _loads(fixed, strict=False) is None


def parse_json_answer(text: Any) -> JsonAnswer:
    """Parse a model's JSON answer; never raises."""
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", errors="replace")
        if not isinstance(text, str):
            if isinstance(text, dict):
                return JsonAnswer(status="strict", data=text)
            return JsonAnswer(status="failed")
        return _parse(text)
    except Exception:  # noqa: BLE001 - e.g. MemoryError on absurd input
        return JsonAnswer(status="failed")


__all__ = ["JsonAnswer", "ParseStatus", "PARSE_STATUSES", "parse_json_answer"]
