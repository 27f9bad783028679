"""Read a model's JSON answer in a fixed order and record how it was obtained.

Order: strict (the whole text is an object) -> fenced (a ```json block, or the
first balanced {...} that parses) -> repaired (trailing commas, single quotes,
unquoted keys, Python None/True/False, smart quotes, comments, missing commas)
-> truncated (the text ends inside an object: open strings and brackets are
closed; `suspect_key` names the key whose value may be cut: the innermost key
whose string/number/literal was cut or whose value is missing, else the key
holding a nested list/object left open; None when only members of the outer
object were lost) -> failed. Also repaired: a double-encoded answer ("{\"a\": 1}").
The status is what the metrics report as the parse mix; a truncated answer's
suspect value is what a scorer should distrust. A truncated answer needs at
least one member, so "I think {" is failed, not an empty object.

`parse_json_answer` never raises: any input (huge, deeply nested, binary-ish)
gives a JsonAnswer.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

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
_MAX_CUTBACKS = 5


def _loads(s: str, strict: bool = True) -> dict[str, Any] | None:
    try:
        v = json.loads(s, strict=strict)
    except Exception:  # noqa: BLE001 - ValueError, RecursionError, MemoryError...
        return None
    return v if isinstance(v, dict) else None


def _scan_braces(text: str) -> tuple[list[tuple[int, int]], int | None]:
    """Outermost balanced {...} spans in start order, and the first '{' never
    closed. Objects nested in another (even an unclosed one) are left out: the
    inner object of a truncated answer must not pass for the answer.

    Strings ("..." and Python's '...') are tracked only inside braces, so quotes
    and apostrophes in the prose around the JSON cannot derail the scan.
    """
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


# ---------------------------------------------------------------- the rewriter

_CLOSERS = {'"': '"', "\u201c": "\u201d\u201c\"", "\u201d": "\u201d\u201c\"", "'": "'", "\u2018": "\u2019\u2018'", "\u2019": "\u2019\u2018'"}
_STR_STOP = {q: re.compile("[\\\\" + re.escape(c) + "]") for q, c in _CLOSERS.items()}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'"}
_NUMBER = re.compile(r"[-+]?(?:Infinity|NaN|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]*)?)")
_JSON_NUMBER_PREFIX = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_BARE = re.compile(r"[^\s{}\[\],:\"'\u201c\u201d\u2018\u2019/]+")
_WS = re.compile(r"[ \t\r\n]+")
_LITERALS = {"true": "true", "false": "false", "null": "null", "True": "true", "False": "false",
             "None": "null", "undefined": "null", "NaN": "NaN", "Infinity": "Infinity"}


class _Frame:
    __slots__ = ("kind", "state", "key", "node")

    def __init__(self, kind: str, node: tuple[Any, ...]) -> None:
        self.kind = kind  # "{" or "["
        self.state = "key" if kind == "{" else "value"  # key/colon/value/comma
        self.key: str | None = None
        self.node = node  # persistent (closer, parent) chain for cheap checkpoints


_SURROGATE = re.compile("[\ud800-\udfff]")


def _join_surrogates(text: str) -> str:
    """"\\ud800\\udc00" escapes decode to a pair of surrogates; join them."""
    if not _SURROGATE.search(text):
        return text
    try:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:  # a lone surrogate stays as json.loads keeps it
        return text


def _read_string(s: str, i: int) -> tuple[str, int, bool]:
    """The string opened at s[i]: (decoded text, index after it, closed?)."""
    closers = _CLOSERS[s[i]]
    stop = _STR_STOP[s[i]]
    parts: list[str] = []
    j = i + 1
    n = len(s)
    while True:
        m = stop.search(s, j)
        if m is None:
            parts.append(s[j:])
            return _join_surrogates("".join(parts)), n, False
        k = m.start()
        parts.append(s[j:k])
        if s[k] in closers:
            return _join_surrogates("".join(parts)), k + 1, True
        if k + 1 >= n:  # dangling backslash at the very end
            return _join_surrogates("".join(parts)), n, False
        e = s[k + 1]
        if e == "u":
            hexs = s[k + 2 : k + 6]
            if len(hexs) == 4 and all(h in "0123456789abcdefABCDEF" for h in hexs):
                parts.append(chr(int(hexs, 16)))
                j = k + 6
                continue
            if k + 6 > n:  # cut inside \\uXXXX
                return _join_surrogates("".join(parts)), n, False
        parts.append(_ESCAPES.get(e, e))
        j = k + 2


def _rewrite(s: str, complete: bool) -> tuple[str, str | None, list[str]]:
    """Rewrite near-JSON into JSON; with `complete`, also close what is open.

    Returns (json text, suspect key, cut-back alternatives) where the
    alternatives drop the last partial member, for when the completion fails.
    """
    out: list[str] = []
    stack: list[_Frame] = []
    node: tuple[Any, ...] = ()
    checkpoints: list[tuple[int, tuple[Any, ...]]] = []
    cut = False
    n, i = len(s), 0
    last = ""  # last significant token emitted

    def before_value() -> None:
        if not stack:
            return
        f = stack[-1]
        if f.state == "comma":  # missing comma: "a": 1 "b": 2
            out.append(",")
            f.state = "key" if f.kind == "{" else "value"
        elif f.state == "colon":  # missing colon: "a" 1
            out.append(":")
            f.state = "value"

    def after_value() -> None:
        if stack:
            stack[-1].state = "comma"

    while i < n:
        c = s[i]
        if c in " \t\r\n":
            m = _WS.match(s, i)
            out.append(m.group())  # type: ignore[union-attr]
            i = m.end()  # type: ignore[union-attr]
            continue
        if c == "/" and s.startswith("//", i):
            j = s.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "/" and s.startswith("/*", i):
            j = s.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        top = stack[-1] if stack else None
        if c in "{[":
            before_value()
            after_value()  # the parent's value is this container, not missing
            out.append(c)
            closer = "}" if c == "{" else "]"
            node = (closer, node)
            stack.append(_Frame(c, node))
            last = c
            i += 1
            continue
        if c in "}]":
            if top is None or c != node[0]:  # a closer that closes nothing open
                if not complete:
                    return "", None, []
                i += 1
                continue
            if last == ",":
                _drop_last(out, ",")
            if top.kind == "{" and top.state in ("colon", "value"):
                out.append(":null" if top.state == "colon" else "null")
            out.append(node[0])
            stack.pop()
            node = node[1]
            after_value()
            last = "}"
            i += 1
            if not stack:  # the root closed: whatever follows is not ours
                break
            continue
        if c == ",":
            if top is not None and top.state == "comma":
                out.append(",")
                top.state = "key" if top.kind == "{" else "value"
                checkpoints.append((len(out) - 1, node))
                last = ","
            i += 1
            continue
        if c == ":":
            if top is not None and top.kind == "{" and top.state == "colon":
                out.append(":")
                top.state = "value"
                last = ":"
            i += 1
            continue
        key_pos = top is not None and top.kind == "{" and top.state in ("key", "comma")
        if c in _CLOSERS:
            text, j, closed = _read_string(s, i)
            if not closed and not complete:
                return "", None, []
            if key_pos:
                if not closed:  # the text stops inside a key: drop it
                    break
                before_value()
                top.key, top.state = text, "colon"  # type: ignore[union-attr]
            else:
                before_value()
                after_value()
                cut = cut or not closed
            out.append(json.dumps(text, ensure_ascii=False))
            last = '"'
            i = j
            continue
        m = _NUMBER.match(s, i) if (c.isdigit() or c in "-+.") else None
        if m is not None and not key_pos:
            tok = m.group().lstrip("+")
            if not tok.startswith(("-I", "I", "N")):
                tok = tok.replace("-.", "-0.")
                tok = ("0" + tok) if tok.startswith(".") else tok
            if m.end() >= n and complete:  # the number may be cut: keep its valid prefix
                cut = True
                pm = _JSON_NUMBER_PREFIX.match(tok)
                tok = pm.group() if pm else "null"
            elif not tok.startswith(("-I", "I", "N")):
                tok = tok.rstrip("eE+-") if tok[-1:] in "eE+-" else tok  # "1e" -> "1"
                tok = tok[:-1] if tok.endswith(".") else tok
            before_value()
            after_value()
            out.append(tok)
            last = "0"
            i = m.end()
            continue
        m = _BARE.match(s, i)
        if m is None:  # a lone quote-like or other stray character
            i += 1
            continue
        word, j = m.group(), m.end()
        if key_pos:
            before_value()
            top.key, top.state = word, "colon"  # type: ignore[union-attr]
            out.append(json.dumps(word, ensure_ascii=False))
        elif top is None:
            pass  # stray text outside any container ("```", prose)
        else:
            lit = _LITERALS.get(word)
            if lit is None and complete and j >= n:
                lit = next((v for k, v in _LITERALS.items() if k.startswith(word)), None)
                lit = "null" if word in ("-", "+") else lit
                cut = True
            before_value()
            after_value()
            out.append(lit if lit is not None else json.dumps(word, ensure_ascii=False))
        last = "0"
        i = j
    suspect: str | None = None
    if not complete:
        return "".join(out), None, []
    if stack and stack[-1].kind == "{" and stack[-1].state in ("colon", "value"):
        cut = True
    if cut:  # a scalar was cut or a value is missing: the innermost key
        suspect = next((f.key for f in reversed(stack) if f.kind == "{" and f.key is not None), None)
    elif len(stack) > 1:  # a nested container never closed: the key holding it
        suspect = next((f.key for f in reversed(stack[:-1]) if f.kind == "{" and f.key is not None), None)
    tail: list[str] = []
    for f in reversed(stack):
        if f.kind == "{" and f.state in ("colon", "value"):
            tail.append(":null" if f.state == "colon" else "null")
        tail.append(f.node[0])
    body = "".join(out).rstrip()
    if body.endswith(","):
        body = body[:-1]
    alternatives = []
    for pos, cp_node in reversed(checkpoints[-_MAX_CUTBACKS:]):
        closers = []
        while cp_node:
            closers.append(cp_node[0])
            cp_node = cp_node[1]
        alternatives.append("".join(out[:pos]) + "".join(closers))
    return body + "".join(tail), suspect, alternatives


def _drop_last(out: list[str], token: str) -> None:
    for k in range(len(out) - 1, -1, -1):
        if out[k] == token:
            out[k] = ""
            return
        if out[k].strip():
            return


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
        fixed, _, _ = _rewrite(cand[cand.index("{"):], complete=False)
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
        fixed, suspect, alternatives = _rewrite(tail, complete=True)
        # An empty object ("I think {") is not an answer, hence the truthiness tests.
        if (data := _loads(fixed, strict=False)) and _is_open(tail):
            return JsonAnswer(status="truncated", data=data, suspect_key=suspect)
        for alt in alternatives:
            if (data := _loads(alt, strict=False)) and _is_open(tail):
                return JsonAnswer(status="truncated", data=data, suspect_key=None)
    return JsonAnswer(status="failed")


def _is_open(tail: str) -> bool:
    """Did the text really stop inside the object (rather than being garbage)?"""
    fixed, _, _ = _rewrite(tail, complete=False)
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
