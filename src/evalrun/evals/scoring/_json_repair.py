"""Rewriting near-JSON into JSON in one pass with a stack of open containers (trailing commas, quotes, unquoted
keys, Python literals, comments, missing commas); with `complete`, closing a text that stops inside an object."""

from __future__ import annotations

import json
import re
from typing import Any

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
    __slots__ = ("opener", "state", "key", "node")

    def __init__(self, opener: str, node: tuple[Any, ...]) -> None:
        self.opener = opener  # "{" or "["
        self.state = "key" if opener == "{" else "value"  # key/colon/value/comma
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


_MAX_CUTBACKS = 5
_GO, _STOP, _FAIL = 0, 1, 2  # what a step tells the loop: go on, stop at the root's end, give up


class _Rewriter:
    """One rewrite's state: output so far, open containers, member ends (for cut-backs), whether a value was cut."""

    __slots__ = ("s", "n", "i", "complete", "out", "stack", "node", "checkpoints", "cut", "last")

    def __init__(self, s: str, complete: bool) -> None:
        self.s, self.n, self.i, self.complete = s, len(s), 0, complete
        self.out: list[str] = []
        self.stack: list[_Frame] = []
        self.node: tuple[Any, ...] = ()
        self.checkpoints: list[tuple[int, tuple[Any, ...]]] = []
        self.cut = False
        self.last = ""  # last significant token emitted

    def run(self) -> tuple[str, str | None, list[str]]:
        s, n = self.s, self.n
        while self.i < n:
            i = self.i
            c = s[i]
            if c in " \t\r\n":
                m = _WS.match(s, i)
                assert m is not None  # s[i] is whitespace
                self.out.append(m.group())
                self.i = m.end()
                continue
            if c == "/" and s.startswith("//", i):
                j = s.find("\n", i)
                self.i = n if j < 0 else j
                continue
            if c == "/" and s.startswith("/*", i):
                j = s.find("*/", i + 2)
                self.i = n if j < 0 else j + 2
                continue
            step = self._token(c, self.stack[-1] if self.stack else None)
            if step == _STOP:
                break
            if step == _FAIL:
                return "", None, []
        return ("".join(self.out), None, []) if not self.complete else self._finish()

    def _token(self, c: str, top: _Frame | None) -> int:
        """Consume the token starting with `c` at self.i; `top` is the innermost open container."""
        if c in "{[":
            return self._open(c)
        if c in "}]":
            return self._close(c, top)
        if c == ",":
            return self._comma(top)
        if c == ":":
            return self._colon(top)
        key_pos = top is not None and top.opener == "{" and top.state in ("key", "comma")
        if c in _CLOSERS:
            return self._string(top, key_pos)
        m = _NUMBER.match(self.s, self.i) if (c.isdigit() or c in "-+.") else None
        return self._number(m) if m is not None and not key_pos else self._bare(top, key_pos)

    def _before_value(self) -> None:
        if not self.stack:
            return
        f = self.stack[-1]
        if f.state == "comma":  # missing comma: "a": 1 "b": 2
            self.out.append(",")
            f.state = "key" if f.opener == "{" else "value"
        elif f.state == "colon":  # missing colon: "a" 1
            self.out.append(":")
            f.state = "value"

    def _after_value(self) -> None:
        if self.stack:
            self.stack[-1].state = "comma"

    def _open(self, c: str) -> int:
        self._before_value()
        self._after_value()  # the parent's value is this container, not missing
        self.out.append(c)
        closer = "}" if c == "{" else "]"
        self.node = (closer, self.node)
        self.stack.append(_Frame(c, self.node))
        self.last = c
        self.i += 1
        return _GO

    def _close(self, c: str, top: _Frame | None) -> int:
        self.i += 1
        if top is None or c != self.node[0]:  # a closer that closes nothing open
            return _GO if self.complete else _FAIL
        if self.last == ",":
            _drop_last(self.out, ",")
        if top.opener == "{" and top.state in ("colon", "value"):
            self.out.append(":null" if top.state == "colon" else "null")
        self.out.append(self.node[0])
        self.stack.pop()
        self.node = self.node[1]
        self._after_value()
        self.last = "}"
        return _GO if self.stack else _STOP  # the root closed: whatever follows is not ours

    def _comma(self, top: _Frame | None) -> int:
        if top is not None and top.state == "comma":
            self.out.append(",")
            top.state = "key" if top.opener == "{" else "value"
            self.checkpoints.append((len(self.out) - 1, self.node))
            self.last = ","
        self.i += 1
        return _GO

    def _colon(self, top: _Frame | None) -> int:
        if top is not None and top.opener == "{" and top.state == "colon":
            self.out.append(":")
            top.state = "value"
            self.last = ":"
        self.i += 1
        return _GO

    def _string(self, top: _Frame | None, key_pos: bool) -> int:
        text, j, closed = _read_string(self.s, self.i)
        if not closed and not self.complete:
            return _FAIL
        if key_pos and top is not None:  # (key_pos: top is an object's frame)
            if not closed:  # the text stops inside a key: drop it
                return _STOP
            self._before_value()
            top.key, top.state = text, "colon"
        else:
            self._before_value()
            self._after_value()
            self.cut = self.cut or not closed
        self.out.append(json.dumps(text, ensure_ascii=False))
        self.last = '"'
        self.i = j
        return _GO

    def _number(self, m: re.Match[str]) -> int:
        tok = m.group().lstrip("+")
        if not tok.startswith(("-I", "I", "N")):
            tok = tok.replace("-.", "-0.")
            tok = ("0" + tok) if tok.startswith(".") else tok
        if m.end() >= self.n and self.complete:  # the number may be cut: keep its valid prefix
            self.cut = True
            pm = _JSON_NUMBER_PREFIX.match(tok)
            tok = pm.group() if pm else "null"
        elif not tok.startswith(("-I", "I", "N")):
            tok = tok.rstrip("eE+-") if tok[-1:] in "eE+-" else tok  # "1e" -> "1"
            tok = tok[:-1] if tok.endswith(".") else tok
        self._before_value()
        self._after_value()
        self.out.append(tok)
        self.last = "0"
        self.i = m.end()
        return _GO

    def _bare(self, top: _Frame | None, key_pos: bool) -> int:
        """An unquoted word: a key, a literal (True, None, ...), or a string value."""
        m = _BARE.match(self.s, self.i)
        if m is None:  # a lone quote-like or other stray character
            self.i += 1
            return _GO
        word, j = m.group(), m.end()
        if key_pos and top is not None:  # (key_pos: top is an object's frame)
            self._before_value()
            top.key, top.state = word, "colon"
            self.out.append(json.dumps(word, ensure_ascii=False))
        elif top is not None:  # (stray text outside any container, "```" or prose, is dropped)
            lit = _LITERALS.get(word)
            if lit is None and self.complete and j >= self.n:
                lit = next((v for k, v in _LITERALS.items() if k.startswith(word)), None)
                lit = "null" if word in ("-", "+") else lit
                self.cut = True
            self._before_value()
            self._after_value()
            self.out.append(lit if lit is not None else json.dumps(word, ensure_ascii=False))
        self.last = "0"
        self.i = j
        return _GO

    def _finish(self) -> tuple[str, str | None, list[str]]:
        """Close what is open; name the suspect key; build the cut-back alternatives."""
        stack = self.stack
        if stack and stack[-1].opener == "{" and stack[-1].state in ("colon", "value"):
            self.cut = True
        suspect: str | None = None
        if self.cut:  # a scalar was cut or a value is missing: the innermost key
            suspect = next((f.key for f in reversed(stack) if f.opener == "{" and f.key is not None), None)
        elif len(stack) > 1:  # a nested container never closed: the key holding it
            suspect = next((f.key for f in reversed(stack[:-1]) if f.opener == "{" and f.key is not None), None)
        tail: list[str] = []
        for f in reversed(stack):
            if f.opener == "{" and f.state in ("colon", "value"):
                tail.append(":null" if f.state == "colon" else "null")
            tail.append(f.node[0])
        body = "".join(self.out).rstrip()
        if body.endswith(","):
            body = body[:-1]
        return body + "".join(tail), suspect, self._alternatives()

    def _alternatives(self) -> list[str]:
        alternatives = []
        for pos, cp_node in reversed(self.checkpoints[-_MAX_CUTBACKS:]):
            closers = []
            while cp_node:
                closers.append(cp_node[0])
                cp_node = cp_node[1]
            alternatives.append("".join(self.out[:pos]) + "".join(closers))
        return alternatives


def rewrite(s: str, complete: bool) -> tuple[str, str | None, list[str]]:
    """(json text, suspect key, cut-backs without the last partial member); ("", None, []) if cut, not `complete`."""
    return _Rewriter(s, complete).run()


def _drop_last(out: list[str], token: str) -> None:
    for k in range(len(out) - 1, -1, -1):
        if out[k] == token:
            out[k] = ""
            return
        if out[k].strip():
            return


__all__ = ["rewrite"]
