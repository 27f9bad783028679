"""Token ids and top-k logprobs (k <= 20) from a served engine's answer, as the in-process runner stores them.

Engines name tokens by text, so ids are found in the local tokenizer's byte-level vocabulary; a token that maps
to no id or to several leaves the answer without a record, counted, never guessed (docs/served-engines.md,
'Token ids and logprobs'). Every logprob is `checked`: one not finite and <= 0 would read as zero drift and
pass a gate it should not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np

from evalrun.contract.errors import RuntimeFailure
from evalrun.runners.logprobs import TokenDists

MAX_TOP = 20  # the OpenAI API's bound on top_logprobs, and vLLM's default max_logprobs
_REST_FLOOR = 1e-30
# a log-softmax in fp32 can land a few ulps of the logits' size above 0 (logits ~100: 1e-5); read as 0
ROUNDING = 1e-4


class NotLogprob(RuntimeFailure, ValueError):
    """A served value that is not a log-probability: nothing built on it can be vouched for."""


def checked(value: float, where: str) -> float:
    """`value` as a log-probability (a rounding above 0 read as 0), or NotLogprob naming `where`."""
    if not (math.isfinite(value) and value <= ROUNDING):
        raise NotLogprob(f"{where}: logprob {value!r} is not a log-probability (finite and <= 0)")
    return min(value, 0.0)


def request_fields(endpoint: Literal["chat", "completions"], k: int) -> dict[str, Any]:
    """The body fields that ask for each generated token's logprob and its top `k` alternatives."""
    k = max(0, min(k, MAX_TOP))
    if k == 0:
        return {}
    return {"logprobs": True, "top_logprobs": k} if endpoint == "chat" else {"logprobs": k}


@dataclass
class ServedToken:
    """One generated token as the server named it: its text or bytes, logprob, and alternatives."""

    token: bytes | int
    logprob: float
    top: list[tuple[bytes | int, float]]


def _name(entry: dict[str, Any]) -> bytes | int:
    """A token's identity from an OpenAI logprob entry: `token_id:N` as the id, else its bytes."""
    text = entry.get("token")
    if isinstance(text, str) and text.startswith("token_id:") and text[9:].isdigit():
        return int(text[9:])
    raw = entry.get("bytes")
    if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        return bytes(raw)
    return text.encode("utf-8") if isinstance(text, str) else b""


def tokens_of(choice: dict[str, Any], endpoint: Literal["chat", "completions"]) -> list[ServedToken] | None:
    """The tokens a choice (a whole answer or one streamed chunk) carries; None: it carries no logprobs."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return None
    if endpoint == "chat" or isinstance(lp.get("content"), list):
        out = []
        for e in lp.get("content") or []:
            if isinstance(e, dict) and isinstance(e.get("logprob"), (int, float)):
                top = [(_name(t), float(t["logprob"])) for t in e.get("top_logprobs") or []
                       if isinstance(t, dict) and isinstance(t.get("logprob"), (int, float))]
                out.append(ServedToken(_name(e), float(e["logprob"]), top))
        return out
    tokens, lps, tops = lp.get("tokens") or [], lp.get("token_logprobs") or [], lp.get("top_logprobs") or []
    out = []
    for i, (text, value) in enumerate(zip(tokens, lps)):
        alts = tops[i] if i < len(tops) and isinstance(tops[i], dict) else {}
        out.append(ServedToken(_name({"token": text}), float(value if value is not None else -math.inf),
                               [(_name({"token": t}), float(v)) for t, v in alts.items()]))
    return out


@dataclass
class TokenIds:
    """Bytes -> id over a byte-level BPE vocabulary (GPT-2's byte-to-character map), special tokens by text."""

    by_bytes: dict[bytes, int]
    ambiguous: set[bytes] = field(default_factory=set)
    # llama-cpp-python names a special token by empty text: the one that ends an answer is the tokenizer's EOS
    empty: int | None = None

    @classmethod
    def of(cls, tokenizer: Any) -> "TokenIds":
        from transformers.convert_slow_tokenizer import bytes_to_unicode

        decode = {c: b for b, c in bytes_to_unicode().items()}
        special = set(getattr(tokenizer, "all_special_tokens", []) or [])
        out: dict[bytes, int] = {}
        ambiguous: set[bytes] = set()
        for text, i in tokenizer.get_vocab().items():
            raw = text.encode("utf-8") if text in special or not all(c in decode for c in text) \
                else bytes(decode[c] for c in text)
            if raw in out and out[raw] != i:
                ambiguous.add(raw)
            out[raw] = i
        eos = getattr(tokenizer, "eos_token_id", None)
        return cls(out, ambiguous, eos if isinstance(eos, int) else None)

    def id(self, name: bytes | int) -> int | None:
        if isinstance(name, int):
            return name
        if name == b"":
            return self.empty
        return None if name in self.ambiguous else self.by_bytes.get(name)


def _alternatives(t: ServedToken, ids: TokenIds, pos: int) -> list[tuple[int, float]]:
    """The alternatives that name one id, best first (duplicates kept once). An empty name is never
    read as an alternative: llama-cpp-python and vLLM both send "" for a partial UTF-8 token as well."""
    out: dict[int, float] = {}
    top = [(name, checked(v, f"token {pos} ({t.token!r}), alternative {name!r}")) for name, v in t.top]
    for name, value in sorted(top, key=lambda a: -a[1]):
        tid = None if name == b"" else ids.id(name)
        if tid is not None and tid not in out:
            out[tid] = value
    return list(out.items())


def token_dists(tokens: list[ServedToken], ids: TokenIds, k: int) -> tuple[TokenDists | None, str | None]:
    """The answer's record, or None and why (a generated token not in the vocabulary, no alternatives).

    Alternatives that map to no id are left out, and so are those past the fewest any token has: one
    record holds the same count per token, and what is left out counts in the rest mass (the estimator
    coarsens to the ids kept plus "anything else", valid for any set of ids)."""
    if not tokens:
        return None, "no logprobs in the answer"
    try:
        own = [checked(t.logprob, f"token {pos} ({t.token!r})") for pos, t in enumerate(tokens)]
        alts = [_alternatives(t, ids, pos) for pos, t in enumerate(tokens)]
    except NotLogprob as exc:
        return None, str(exc)
    k = min([k, *(len(a) for a in alts)])
    if k == 0:
        return None, "no top logprobs that name a token of the tokenizer"
    rows, top_ids, top_lps, rest = [], [], [], []
    for pos, (t, best) in enumerate(zip(tokens, alts)):
        tid = ids.id(t.token)
        if tid is None:
            return None, f"token {pos} ({t.token!r}) is not one entry of the tokenizer's vocabulary"
        rows.append(tid)
        top_ids.append([i for i, _ in best[:k]])
        top_lps.append([v for _, v in best[:k]])
        mass = float(np.exp(np.asarray(top_lps[-1], dtype=np.float64)).sum())
        rest.append(math.log(max(1.0 - mass, _REST_FLOOR)))
    return TokenDists(ids=np.asarray(rows, np.int32), logprob=np.asarray(own, np.float32),
                      top_ids=np.asarray(top_ids, np.int32), top_logprobs=np.asarray(top_lps, np.float32),
                      rest_logprob=np.asarray(rest, np.float32)), None


class ServedDists:
    """The runner's side of it: what to ask, each answer's record held until its generation is
    stored (a record is written before its generation line, as in process), and what was missing."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.top_k = 0  # the run request's (the config's `logprobs`); 0 asks for none
        self.on_distribution: Callable[[str, TokenDists], None] | None = None
        self._ids: TokenIds | None = None
        self._pending: dict[str, TokenDists] = {}
        self.stored = 0
        self.missing = 0
        self.first_missing: str | None = None

    def fields(self, endpoint: Literal["chat", "completions"]) -> dict[str, Any]:
        return request_fields(endpoint, self.top_k) if self.on_distribution is not None else {}

    def take(self, item_id: str, tokens: list[ServedToken] | None, text: str) -> list[int] | None:
        """Hold the answer's record; its token ids (the generation's output_ids), or None without one.
        The ids must decode to the answer's text, or the mapping is not trusted."""
        if self.on_distribution is None or self.top_k == 0:
            return None
        if self._ids is None:
            self._ids = TokenIds.of(self.tokenizer)
        record, why = token_dists(tokens or [], self._ids, min(self.top_k, MAX_TOP))
        if record is not None and self.tokenizer.decode(record.ids.tolist(), skip_special_tokens=True) != text:
            record, why = None, "its token ids do not decode to the answer's text"
        if record is None:
            self.missing += 1
            self.first_missing = self.first_missing or f"item {item_id}: {why}"
            return None
        self._pending[item_id] = record
        return [int(i) for i in record.ids]

    def store(self, item_id: str) -> None:
        """Write the item's held record (the store thread calls this just before storing its generation)."""
        record = self._pending.pop(item_id, None)
        if record is not None and self.on_distribution is not None:
            self.on_distribution(item_id, record)
            self.stored += 1

    def facts(self) -> dict[str, Any]:
        return {"top_k_asked": min(self.top_k, MAX_TOP), "answers_with": self.stored, "answers_without": self.missing,
                "first_without": self.first_missing}
