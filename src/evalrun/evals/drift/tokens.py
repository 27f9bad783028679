"""The baseline's answer tokens as text, one piece per token, for the item browser's per-token KL strip.

Each piece is what the token adds to the decoded answer: the decoding of a few tokens before it and of
the same tokens with it differ by that piece. Decoding a token alone would lose what a tokenizer makes
of its context (SentencePiece drops the leading space of a first token); the window keeps it. A token
holding only part of a multi-byte character gets an empty piece: the character shows on the token that
completes it. Special tokens are kept (`<|im_end|>`): every token gets a piece, so the pieces line up
with the KL of each token. The tokenizer is the baseline run's own (its manifest's model); where it
cannot be loaded here the strip shows token ids and says why.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from evalrun.evals.results import RunResult
from evalrun.runners.models import ModelSource, load_tokenizer

WINDOW = 4  # tokens decoded before each one
_KINDS = frozenset({"gguf", "dir", "hub"})
_PARTIAL = "\ufffd"


def pieces(tokenizer: Any, ids: list[int]) -> list[str]:
    """One text piece per token of `ids` (joined, they are the decoded answer, special tokens included)."""
    seqs: list[list[int]] = []
    for i in range(len(ids)):
        lo = max(0, i - WINDOW)
        seqs += [ids[lo:i], ids[lo:i + 1]]
    if not seqs:
        return []
    texts = tokenizer.batch_decode(seqs, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    out = []
    for before, after in zip(texts[::2], texts[1::2]):
        piece = after[len(os.path.commonprefix([before, after])):]
        # an unfinished character decodes as U+FFFD: it belongs to the token that completes it
        out.append(piece.rstrip(_PARTIAL) if after.endswith(_PARTIAL) else piece)
    return out


def baseline_tokenizer(baseline: RunResult) -> tuple[Any | None, str | None]:
    """(the tokenizer the baseline generated with, None) or (None, why it cannot be loaded here)."""
    m = baseline.manifest.model
    if m is None or m.kind not in _KINDS or not m.spec or not m.location:
        return None, f"{baseline.name}'s manifest names no local model: the strip shows token ids"
    try:
        return load_tokenizer(ModelSource(m.spec, m.kind, m.location, dict(m.identity))), None
    except Exception as exc:  # a missing file, a hub id offline: the strip is still readable by token ids
        return None, f"the tokenizer of {m.spec!r} could not be loaded ({str(exc)[:200]}): the strip shows token ids"


def answer_pieces(baseline: RunResult, item_ids: Iterable[str]) -> tuple[dict[str, list[str]], str | None]:
    """Each item's baseline answer as token pieces (ids as "#123" when the tokenizer is not here), and why ids."""
    wanted = [i for i in item_ids if i in baseline.generations]
    if not wanted:
        return {}, None
    tokenizer, note = baseline_tokenizer(baseline)
    out: dict[str, list[str]] = {}
    for item_id in wanted:
        ids = list(baseline.generations[item_id].output_ids or [])
        out[item_id] = pieces(tokenizer, ids) if tokenizer is not None else [f"#{t}" for t in ids]
    return out, note


__all__ = ["WINDOW", "answer_pieces", "baseline_tokenizer", "pieces"]
