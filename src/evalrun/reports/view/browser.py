"""The item browser's data, compact so that 10,000 items x 3 candidates stay a few MB
(layout: docs/html-report.md, 'Data layout').
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any, Callable

from evalrun.contract.types import ItemMeta, flip
from evalrun.evals.compare import Comparison, candidate_outcome, diffs, display_value
from evalrun.evals.results import RunResult
from evalrun.evals.scoring import ScoredItem
from evalrun.evals.gate import Verdict
from evalrun.reports.text import safe_tree, units
from evalrun.reports.view.model import NOSCRIPT_FLIPS, OUTCOMES, BrowserData, ListedFlip, LONG_DOCUMENT_CHARS
from evalrun.reports.view.strip import Strips, kl_scale

OP_TAGS = {"replace": 1, "insert": 2, "delete": 3}
VALUE_CHARS = 200  # a value longer than this is clipped in the rows (the full output is in the texts)
RAW_ANSWER_CHARS = 80  # a free-text answer without a parsed value is shown clipped to this
OUTPUT_CHARS = 20_000
MAX_TEXT_BYTES = 6_000_000  # the gzipped texts, base64
MAX_PAYLOAD_BYTES = 9_000_000  # rows + texts: the page's tables, heatmaps and flip list fit in the last MB of 10


def _display_value(item: ScoredItem, name: str) -> str | None:
    """`pairing.display_value`, clipped: parsed values and errors short, raw answers a little longer."""
    value = display_value(item, name)
    if value is None:
        return None
    if value == item.output and item.error is None:
        return units.flat_clip(value, RAW_ANSWER_CHARS)
    return units.clip(value, VALUE_CHARS)


def _gold_display(item: ScoredItem, name: str) -> str | None:
    score = item.fields.get(name)
    if score is not None and score.gold_norm is not None:
        return score.gold_norm
    return item.golds.get(name)


# a character diff says something only about a value that was read and is wrong or close
_DIFFED = frozenset({"wrong_value", "near_match", "partial"})


def _wants_diff(outcome: str, subcode: str | None) -> bool:
    return outcome in _DIFFED and subcode != "unparseable"


def _utf16(text: str) -> Callable[[int], int]:
    """Map code-point offsets to the UTF-16 offsets a browser's strings use (they differ past the BMP)."""
    if not text or text.isascii() or max(text) < "\U00010000":
        return lambda i: i
    prefix = [0]
    for ch in text:
        prefix.append(prefix[-1] + (2 if ord(ch) >= 0x10000 else 1))
    return lambda i: prefix[i]


def _flat_ops(a: str | None, b: str | None) -> list[int] | int:
    if a is None or b is None or not diffs.diffable(a, b):
        return 0
    ua, ub = _utf16(a), _utf16(b)
    out: list[int] = []
    for op in diffs.opcodes(a, b):
        out += [OP_TAGS[op.tag], ua(op.a0), ua(op.a1), ub(op.b0), ub(op.b1)]
    return out


class _Texts:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.texts: list[str] = []

    def add(self, text: str | None) -> int:
        if text is None:
            return -1
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.texts)
            self.texts.append(text)
        return i


def _split_prompt(prompt: str) -> tuple[str, str]:
    """(head, tail): the document part, shared by items asking about one document, and the question."""
    cut = prompt.rfind("\n\n")
    return (prompt, "") if cut <= 0 else (prompt[:cut], prompt[cut:])


def _highlight_strings(meta: ItemMeta, fields: list[str]) -> list[tuple[str, int]]:
    """(text to highlight, field index or -1): the needle, or the sentence each field's value came from."""
    out: list[tuple[str, int]] = []
    if isinstance(meta.get("needle"), str):
        out.append((meta["needle"], -1))
    if isinstance(meta.get("source"), str):
        out.append((meta["source"], fields.index(meta["field"]) if meta.get("field") in fields else -1))
    fm = meta.get("fields")
    if isinstance(fm, dict):
        for name, info in fm.items():
            if isinstance(info, dict) and isinstance(info.get("source"), str):
                out.append((info["source"], fields.index(name) if name in fields else -1))
    for d in meta.get("distractors") or []:
        if isinstance(d, dict) and isinstance(d.get("sentence"), str):
            out.append((d["sentence"], -2))  # -2: a distractor, marked differently
    return out


def _spans(head: str, wanted: list[tuple[str, int]]) -> list[list[int]]:
    spans = []
    for text, field in wanted:
        if not text:
            continue
        at = head.find(text)
        if at >= 0:
            spans.append([at, at + len(text), field])
    return sorted(spans)


def _excerpt(head: str, spans: list[list[int]], window: int) -> tuple[str, list[list[int]], int]:
    """Keep the start and `window` characters around each highlight: (text, moved highlights, characters left out)."""
    keep = [(0, min(len(head), 300))] + [(max(0, s - window), min(len(head), e + window)) for s, e, _ in spans]
    keep.sort()
    merged: list[list[int]] = []
    for s, e in keep:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    parts: list[str] = []
    out_len = pos = cut = 0
    moved: list[list[int]] = []
    for s, e in merged:
        if s > pos:
            gap = f" […{s - pos:,} characters not stored in this report…] "
            parts.append(gap)
            out_len += len(gap)
            cut += s - pos
        moved += [[out_len + a - s, out_len + b - s, f] for a, b, f in spans if s <= a and b <= e]
        parts.append(head[s:e])
        out_len += e - s
        pos = e
    if pos < len(head):
        parts.append(f" […{len(head) - pos:,} characters not stored in this report…]")
        cut += len(head) - pos
    return "".join(parts), moved, cut


def _info(meta: ItemMeta) -> str:
    bits = []
    tokens = meta.get("context_tokens")
    if isinstance(tokens, int):
        bits.append(f"context {tokens:,} tokens")
    depth = meta.get("depth", meta.get("field_depth"))
    if isinstance(depth, (int, float)):
        bits.append(f"depth {float(depth):.2f}")
    for key in ("value_kind", "doc_type", "doc_id", "mode"):
        if meta.get(key) is not None:
            bits.append(f"{key.replace('_', ' ')} {meta[key]}")
    return " · ".join(bits)


def _pack_texts(texts: list[str], details: list[list[Any]]) -> str:
    # made safe here, after the highlights and diffs were measured: safe_text keeps every offset
    raw = json.dumps(safe_tree({"texts": texts, "details": details}), ensure_ascii=False,
                     separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


class _Index:
    """The tables the rows point into: packs, fields (with their types), sub-codes."""

    def __init__(self) -> None:
        self.packs: dict[str, int] = {}
        self.fields: dict[str, int] = {}
        self.kinds: dict[str, str] = {}
        self.subcodes: dict[str | None, int] = {None: 0}
        self.outcomes = {o: i for i, o in enumerate(OUTCOMES)}

    @staticmethod
    def of(table: dict, key: Any) -> int:
        if key not in table:
            table[key] = len(table)
        return table[key]


def _outcome(s: ScoredItem, name: str) -> tuple[str | None, str, str | None]:
    """(value shown, outcome, sub-code) of one field of one answered item."""
    out = candidate_outcome(s, name)
    sub = s.fields[name].subcode if name in s.fields and s.error is None else None
    return _display_value(s, name), out, sub


def _cell(ix: _Index, gold: str | None, base: tuple[str | None, str, str | None], answered: bool,
          c: ScoredItem | None, name: str) -> tuple[Any, int]:
    """One candidate's cell of a row and its flip (1 harmful, -1 helpful, 0 none)."""
    if c is None:
        return None, 0
    c_val, c_out, c_sub = _outcome(c, name)
    if (c_val, c_out, c_sub) == base:
        return 0, 0
    # a baseline without an answer is not a flip (pairing reports it as missing)
    direction = flip(base[1], c_out) if answered else 0
    ops = _flat_ops(gold, c_val) if _wants_diff(c_out, c_sub) else 0
    return [c_val, ix.outcomes[c_out], ix.of(ix.subcodes, c_sub), direction, ops], direction


def _item_rows(ix: _Index, item: Any, b: ScoredItem | None, cands: list[ScoredItem | None],
               i_item: int) -> tuple[list[list[Any]], dict[str, str], int]:
    """The rows of one item (one per field), the golds as written where they differ, and its flips."""
    rows: list[list[Any]] = []
    as_written: dict[str, str] = {}
    flips = 0
    for f in item.fields:
        ix.kinds.setdefault(f.name, f.kind)
        gold = _gold_display(b, f.name) if b is not None else f.gold
        base = (None, "unanswered", None) if b is None else _outcome(b, f.name)
        if f.gold is not None and f.gold != gold:
            as_written[f.name] = f.gold
        b_ops = _flat_ops(gold, base[0]) if _wants_diff(base[1], base[2]) else 0
        cells = []
        for c in cands:
            cell, direction = _cell(ix, gold, base, b is not None, c, f.name)
            cells.append(cell)
            flips += direction != 0
        b_val = base[0]
        rows.append([i_item, ix.of(ix.fields, f.name), gold, 0 if b_val is not None and b_val == gold else b_val,
                     ix.outcomes[base[1]], ix.of(ix.subcodes, base[2]), b_ops, cells])
    return rows, as_written, flips


def _output(texts: _Texts, s: ScoredItem | None) -> int:
    if s is None:
        return -1
    if s.error is not None:
        return texts.add(f"error: {s.error}")
    return texts.add(units.clip(s.output, OUTPUT_CHARS) if s.output is not None else None)


def _fit_texts(ix: _Index, texts: _Texts, details: list[list[Any]], heads: list[tuple[str, list[list[int]], list[str]]],
               budget: int) -> str:
    """The shared documents, whole when they fit the budget, else cut around their highlights."""
    blob = ""
    for window in (None, 4000, 2000, 1000, 250, 0):
        t = _Texts()
        t.texts, t.index = list(texts.texts), dict(texts.index)
        cache: dict[str, tuple[str, list[list[int]], int]] = {}
        offsets: dict[str, Any] = {}
        for detail, (head, spans, names) in zip(details, heads):
            text, moved, cut = head, spans, 0
            if window is not None and len(head) > LONG_DOCUMENT_CHARS:
                if head not in cache:
                    cache[head] = _excerpt(head, spans, window)
                text, moved, cut = cache[head]
            detail[0] = t.add(text)
            if moved:
                u = offsets.get(text) or offsets.setdefault(text, _utf16(text))
                detail[5] = [[u(s), u(e), ix.of(ix.fields, names[f]) if f >= 0 else f] for s, e, f in moved]
            else:
                detail[5] = []
            detail[6] = cut
        blob = _pack_texts(t.texts, details)
        if len(blob) <= budget:
            break
    return blob


def browser_data(report: Any, max_text_bytes: int = MAX_TEXT_BYTES) -> tuple[BrowserData, str, int]:
    """(the rows, the texts blob, how many documents were cut to fit)."""
    base_run: RunResult = report.baseline
    cands: list[RunResult] = [c.run for c in report.candidates]
    base_scored = {s.item_id: s for s in report.baseline_scored}
    cand_scored = [{s.item_id: s for s in c.scored} for c in report.candidates]
    ix, texts = _Index(), _Texts()
    drifts = [c.drift for c in report.candidates]
    strips = Strips(drifts, len(base_run.items))
    items: list[list[Any]] = []
    details: list[list[Any]] = []
    heads: list[tuple[str, list[list[int]], list[str]]] = []  # per item, for the size budget
    rows: list[list[Any]] = []
    flips = 0
    for item in base_run.items:
        b = base_scored.get(item.id)
        names = [f.name for f in item.fields]
        head, tail = _split_prompt(item.prompt if item.system is None else f"{item.system}\n\n{item.prompt}")
        heads.append((head, _spans(head, _highlight_strings(item.meta, names)), names))
        cand_items = [cs.get(item.id) for cs in cand_scored]
        details.append([-1, texts.add(tail) if tail else -1, _output(texts, b), [_output(texts, c) for c in cand_items],
                        _info(item.meta), [], 0, -1, strips.of(item.id, texts.add)])
        item_rows, as_written, n_flips = _item_rows(ix, item, b, cand_items, len(items))
        items.append([item.id, ix.of(ix.packs, item.pack)])
        rows += item_rows
        flips += n_flips
        if as_written:
            details[-1][7] = texts.add(json.dumps(as_written, ensure_ascii=False))
    rows_bytes = len(json.dumps([items, rows], ensure_ascii=False, separators=(",", ":")))
    blob = _fit_texts(ix, texts, details, heads, min(max_text_bytes, max(1_000_000, MAX_PAYLOAD_BYTES - rows_bytes)))
    browser = BrowserData(
        baseline=base_run.name, candidates=[c.name for c in cands], packs=list(ix.packs), fields=list(ix.fields),
        kinds=[ix.kinds.get(n, "") for n in ix.fields], outcomes=OUTCOMES,
        subcodes=list(ix.subcodes), items=items, rows=rows, run_dirs=[str(base_run.dir), *(str(c.dir) for c in cands)],
        flips=flips, kl_scale=kl_scale(drifts),
    )
    return browser, blob, len({d[0] for d in details if d[6]})


def listed_flips(comparison: Comparison, base: list[ScoredItem], cand: list[ScoredItem],
                 verdict: Verdict | None = None) -> list[ListedFlip]:
    """The first NOSCRIPT_FLIPS harmful flips, in the order every renderer lists them, as the page shows them,
    each with how the gate took it (counted, confirmed, or noise)."""
    b_by_id, c_by_id = {s.item_id: s for s in base}, {s.item_id: s for s in cand}
    out = []
    for f in comparison.harmful[:NOSCRIPT_FLIPS]:
        b, c = b_by_id[f.item_id], c_by_id[f.item_id]
        gold = _gold_display(b, f.field)
        c_val, c_out, c_sub = _outcome(c, f.field)
        segments = (diffs.segments(gold, c_val) if gold is not None and c_val is not None
                    and _wants_diff(c_out, c_sub) and diffs.diffable(gold, c_val) else None)
        out.append(ListedFlip(flip=f, gold=gold, baseline_value=_display_value(b, f.field), candidate_value=c_val,
                              gold_segments=segments,
                              status=units.flip_status(f, verdict) or "counted"))
    return out
