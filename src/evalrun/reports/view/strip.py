"""The item browser's per-token KL strip, stored in browser.py's `details[i][8]`
(layout: docs/html-report.md, 'Data layout').
"""

from __future__ import annotations

import math
from typing import Any, Callable

from evalrun.evals.drift import Drift
from evalrun.reports.view.heatmaps import KL_HIGH, KL_LOW, KL_STOPS

STRIP_TOKENS = 256  # an answer's first tokens shown in its strip: a long answer costs no more
# the KL codes of all strips together (about 1.2 bytes each in the page, gzipped and base64): with many items
# and candidates each strip shows fewer tokens, never fewer than STRIP_MIN_TOKENS
STRIP_CODES = 1_500_000
STRIP_MIN_TOKENS = 16


KL_STEPS = 20  # codes per decade: a token's KL is shown to within 12%
KL_SMALLEST = -10  # log10 of the smallest KL with a code of its own; at or below it (0 included): code 0


def kl_code(x: float) -> int | None:
    """A token's KL as a small integer, round(KL_STEPS * (log10 KL - KL_SMALLEST)), 0 at or below 1e-10: three
    digits where the decimal would take seven, for 10,000 answers. None: not finite (JSON has no NaN)."""
    if not math.isfinite(x):
        return None
    return max(0, round(KL_STEPS * (math.log10(x) - KL_SMALLEST))) if x > 0 else 0


def kl_value(code: int) -> float:
    """What the page shows for a code (browser.js computes the same)."""
    return 0.0 if code == 0 else 10 ** (code / KL_STEPS + KL_SMALLEST)


def kl_scale(drifts: list[Drift | None]) -> dict[str, Any]:
    """The strip's colours (the KL heatmaps' scale) and, where the tokenizer was missing, why ids show."""
    note = next((d.tokens_note for d in drifts if d is not None and d.tokens_note), None)
    return {"stops": KL_STOPS, "low": KL_LOW, "high": KL_HIGH, "steps": KL_STEPS, "smallest": KL_SMALLEST,
            "note": note}


class Strips:
    """The strip of each item, for the candidates in the browser's order (None: no drift measured)."""

    def __init__(self, drifts: list[Drift | None], items: int) -> None:
        self.drifts = drifts
        measured = sum(d is not None for d in drifts)
        self.cap = max(STRIP_MIN_TOKENS, min(STRIP_TOKENS, STRIP_CODES // max(1, items * measured)))
        self.notes: list[dict[str, list[Any]]] = []
        for d in drifts:
            by_item: dict[str, list[Any]] = {}
            for n in d.flips if d is not None else []:
                by_item.setdefault(n.item_id, []).append(n)
            self.notes.append(by_item)

    def _cand(self, k: int, item_id: str) -> list[Any] | None:
        d = self.drifts[k]
        row = d.per_item.get(item_id) if d is not None else None
        if row is None:
            return None
        n = min(int(row.kl.size), self.cap)
        notes = self.notes[k].get(item_id, [])
        first = min((x.position for x in notes if x.position is not None), default=-1)
        return [[kl_code(float(v)) for v in row.kl[:n]], [int(i) for i in (~row.same_top1[:n]).nonzero()[0]], first,
                [[x.field, x.text] for x in notes]]

    def of(self, item_id: str, add_text: Callable[[str], int]) -> list[Any] | int:
        """The item's strip; `add_text` stores a text in the browser's table and gives its index."""
        cands = [self._cand(k, item_id) for k in range(len(self.drifts))]
        if all(c is None for c in cands):
            return -1
        total = next(int(d.per_item[item_id].kl.size) for d in self.drifts if d is not None and item_id in d.per_item)
        tokens = next((d.tokens[item_id] for d in self.drifts if d is not None and item_id in d.tokens), None)
        if tokens is None or len(tokens) < total:  # no decoded answer: one blank per token, still shaded
            tokens = ["·"] * total
        tokens = tokens[:self.cap]
        return [add_text("".join(tokens)), [_utf16_len(t) for t in tokens], total, cands]


def _utf16_len(text: str) -> int:
    """The length the page's strings give `text` (characters past the BMP count twice)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


__all__ = ["KL_STEPS", "STRIP_CODES", "STRIP_TOKENS", "Strips", "kl_code", "kl_scale", "kl_value"]
