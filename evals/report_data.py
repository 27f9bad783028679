"""The data behind the HTML report: everything the page shows, computed here.

`build_report_data(report)` turns a `CompareReport` into a `ReportData`, the
contract with `reports/html.py`: the verdict and its rules, per-pack and
per-field tables with intervals, the speed-accuracy table, accuracy heatmaps
(length x depth) with their colours, character diffs of the changed values,
and the item browser's rows. The renderer only lays this out; it computes
nothing.

The item browser is data for a small script in the page, kept compact so that
10,000 items x 3 candidates stay a few MB:

- `BrowserData.items[i]` = [id, pack index].
- `BrowserData.rows[r]` = [item index, field index, gold (normalised),
  baseline value or 0 (same as the gold), baseline outcome index, baseline
  sub-code index, baseline diff ops, [cell per candidate]]; a cell is 0 (same
  value and outcome as the baseline), None (the candidate has no answer for
  the item) or [value, outcome index, sub-code index, flip (1 harmful, -1
  helpful, 0 none), diff ops]. Diff ops are flat [tag, gold start, gold end,
  value start, value end, ...] (UTF-16 offsets, as the page's strings count)
  with tag 1 replace, 2 insert, 3 delete (`evals.diffs.opcodes`), or 0.
- What a row shows only when expanded is gzipped and base64-encoded in
  `ReportData.texts_blob`: JSON {"texts": [unique strings], "details": [per
  item: head text index, tail text index, baseline output text index,
  [candidate output text index per candidate], info line, highlights,
  characters cut from the head, text index of a JSON object {field: gold as
  written} or -1]}. A prompt is stored as its head (up to its last blank
  line: the document, shared by items that ask about it) and its tail (the
  question). Highlights are [start, end, field index; -1 the needle, -2 a
  distractor] in the head. Text index -1 is "none". The page inflates the blob
  with the browser's own DecompressionStream when a row is first expanded.
  When it would not fit `max_text_bytes`, long documents are cut to windows
  around their highlights and say how much was left out.
"""

from __future__ import annotations

import base64
import gzip
import json
from datetime import datetime, timezone
from typing import Any

import numpy as np
from pydantic import BaseModel, Field as PydField

from evalrun.evals import diffs, stats
from evalrun.evals.runs import RunResult
from evalrun.evals.verdict import RuleResult, Verdict
from evalrun.evals.metrics import field_counts
from evalrun.evals.pairing import Comparison, PackComparison, display_value, length_bucket
from evalrun.evals.scoring import ScoredItem
from evalrun.evals.capacity import CapacityInputs
from evalrun.evals.speed_table import EMULATED_NOTE, SpeedRow, SpeedTable, effects_facts, method_label, speed_table  # noqa: F401 (EMULATED_NOTE re-exported)
from evalrun.contract.types import CORRECT_OUTCOMES

# --------------------------------------------------------------------------- the contract

OUTCOMES = ["correct", "correct_absent", "near_match", "partial", "wrong_value", "missing", "hallucinated", "error",
            "unanswered"]
OP_TAGS = {"replace": 1, "insert": 2, "delete": 3}
NOSCRIPT_FLIPS = 500  # harmful flips per candidate listed in the page for readers without JavaScript
VALUE_CHARS = 200  # a value longer than this is clipped in the rows (the full output is in the texts)
RAW_ANSWER_CHARS = 80  # a free-text answer without a parsed value is shown clipped to this
OUTPUT_CHARS = 20_000
MAX_TEXT_BYTES = 6_000_000  # the gzipped texts, base64
MAX_PAYLOAD_BYTES = 9_000_000  # rows + texts: the page's tables, heatmaps and flip list fit in the last MB of 10
LONG_DOCUMENT_CHARS = 1_500  # the page shows longer documents collapsed


class RunInfo(BaseModel):
    name: str
    role: str  # baseline | candidate | repeat (A/A)
    dir: str
    model: str = ""
    device: str = ""
    dtype: str = ""
    method: str = "none"  # the accelerations with their main settings
    emulated: list[str] = PydField(default_factory=list)
    effects: list[str] = PydField(default_factory=list)  # what each acceleration measured, as short facts
    items: int = 0


class RuleView(BaseModel):
    candidate: str
    pack: str
    rule: str
    measured: float | None  # None: the rule could not be evaluated
    threshold: float
    comparator: str
    passed: bool
    status: str
    origin: str
    detail: str
    text: str


class GapView(BaseModel):
    pack: str
    reason: str


class VerdictView(BaseModel):
    candidate: str
    passed: bool
    status: str
    summary: str
    rules: list[RuleView]
    gaps: list[GapView]
    notes: list[str]
    failed: int


class PackRow(BaseModel):
    pack: str
    n: int
    baseline_accuracy: float
    candidate_accuracy: float
    delta_points: float
    ci_low_points: float | None
    ci_high_points: float | None
    confidence: float | None
    p_value: float | None
    mde_points: float | None
    harmful_flips: int  # fields
    harmful_items: int
    helpful_items: int
    errors: int
    agreement: float
    aa_harmful: int | None = None
    passed: bool | None = None
    status: str | None = None
    speed_only: bool = False  # the pack asks for no fields: nothing scored


class FieldRow(BaseModel):
    pack: str
    field: str
    kind: str
    n: int
    baseline_accuracy: float
    candidate_accuracy: float
    delta_points: float
    ci_low_points: float | None
    ci_high_points: float | None
    baseline_f1: float
    candidate_f1: float
    harmful_flips: int
    helpful_flips: int


class HeatCell(BaseModel):
    n: int
    value: float | None  # accuracy (0-1) or difference in points
    label: str  # what the cell shows
    tooltip: str
    fill: str
    ink: str  # text colour readable on `fill`


class Heatmap(BaseModel):
    title: str
    kind: str  # baseline | candidate | difference
    rows: list[str]  # depth labels, top to bottom
    cols: list[str]  # context-length labels, left to right
    cells: list[list[HeatCell | None]]  # [row][col]
    legend: list[tuple[str, str]]  # (label, fill)


class HeatmapSet(BaseModel):
    pack: str
    unit: str
    baseline: Heatmap
    candidate: Heatmap
    difference: Heatmap


class FlipView(BaseModel):
    """One harmful flip as the page lists it without JavaScript."""

    candidate: str
    item_id: str
    pack: str
    field: str
    kind: str
    gold: str | None
    baseline_value: str | None
    candidate_value: str | None
    candidate_outcome: str
    subcode: str | None
    gold_segments: list[diffs.Segment] | None = None  # gold -> candidate value, when diffable


class CandidateSection(BaseModel):
    name: str
    passed: bool
    status: str
    packs: list[PackRow]
    fields: list[FieldRow]
    heatmaps: list[HeatmapSet]
    harmful_total: int
    helpful_total: int
    flips: list[FlipView]  # the first NOSCRIPT_FLIPS harmful flips
    missing_in_candidate: int
    missing_in_baseline: int


class BrowserData(BaseModel):
    baseline: str
    candidates: list[str]
    packs: list[str]
    fields: list[str]
    kinds: list[str]  # each field's type, aligned with `fields`
    outcomes: list[str]
    subcodes: list[str | None]
    items: list[list[Any]]
    rows: list[list[Any]]
    run_dirs: list[str]  # baseline first, then the candidates: where the full prompts live
    flips: int  # harmful + helpful cells over all candidates


class ReportData(BaseModel):
    title: str
    created: str
    passed: bool
    status: str
    baseline: RunInfo
    candidates: list[RunInfo]
    verdicts: list[VerdictView]
    sections: list[CandidateSection]
    speed: list[SpeedRow]
    noise_floor: str | None
    browser: BrowserData
    texts_blob: str  # base64(gzip(JSON list of texts))
    texts_cut: int  # documents shortened to fit MAX_TEXT_BYTES
    flips_listed_max: int = NOSCRIPT_FLIPS
    long_document_chars: int = LONG_DOCUMENT_CHARS
    speed_spread_note: str = ""
    capacity_note: str | None = None


# --------------------------------------------------------------------------- helpers


def _pct(x: float) -> float:
    return 100.0 * x


def _outcome_ok(outcome: str) -> bool:
    return outcome in CORRECT_OUTCOMES


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _display_value(item: ScoredItem, name: str) -> str | None:
    """`pairing.display_value`, clipped: parsed values and errors short, raw answers a little longer."""
    value = display_value(item, name)
    if value is None:
        return None
    if value == item.output and item.error is None:
        return _clip(" ".join(value.split()), RAW_ANSWER_CHARS)
    return _clip(value, VALUE_CHARS)


def _gold_display(item: ScoredItem, name: str) -> str | None:
    score = item.fields.get(name)
    if score is not None and score.gold_norm is not None:
        return score.gold_norm
    return item.golds.get(name)


# a character diff says something only about a value that was read and is wrong or close
_DIFFED = frozenset({"wrong_value", "near_match", "partial"})


def _wants_diff(outcome: str, subcode: str | None) -> bool:
    return outcome in _DIFFED and subcode != "unparseable"


def _utf16(text: str):  # type: ignore[no-untyped-def]
    """Map code-point offsets to the UTF-16 offsets a browser's strings use (they differ past the BMP)."""
    if not text or text.isascii() or max(text) < "\U00010000":
        return lambda i: i
    prefix = [0]
    for ch in text:
        prefix.append(prefix[-1] + (2 if ord(ch) >= 0x10000 else 1))
    return lambda i: prefix[i]


def _flat_ops(a: str | None, b: str | None) -> list[int] | int:
    if not diffs.diffable(a, b):
        return 0
    ua, ub = _utf16(a), _utf16(b)  # type: ignore[arg-type]
    out: list[int] = []
    for op in diffs.opcodes(a, b):  # type: ignore[arg-type]
        out += [OP_TAGS[op.tag], ua(op.a0), ua(op.a1), ub(op.b0), ub(op.b1)]
    return out


def _run_info(run: RunResult, role: str) -> RunInfo:
    m = run.manifest
    model = m.get("model") or {}
    return RunInfo(
        name=run.name, role=role, dir=str(run.dir),
        model=str(model.get("spec") or (m.get("config") or {}).get("model") or ""),
        device=str(m.get("device") or ""), dtype=str(m.get("dtype") or ""),
        method=method_label(m), emulated=[str(e) for e in m.get("emulated") or []], effects=effects_facts(m),
        items=len(run.items),
    )


def _verdict_view(v: Verdict) -> VerdictView:
    from evalrun.reports.summary import rule_text

    def rule(r: RuleResult) -> RuleView:
        return RuleView(candidate=r.candidate, pack=r.pack, rule=r.rule, measured=r.measured if r.evaluated else None,
                        threshold=r.threshold, comparator=r.comparator, passed=r.passed, status=r.status,
                        origin=r.origin, detail=r.detail, text=rule_text(r))

    return VerdictView(candidate=v.candidate, passed=v.passed, status=v.status, summary=v.summary(),
                       rules=[rule(r) for r in v.rules], gaps=[GapView(pack=g.pack, reason=g.reason) for g in v.gaps],
                       notes=list(v.notes),
                       failed=len(v.failed))


# --------------------------------------------------------------------------- tables


def _pack_row(pc: PackComparison, verdict: Verdict | None, aa: PackComparison | None) -> PackRow:
    st = pc.stats
    return PackRow(
        pack=pc.pack, n=pc.n, baseline_accuracy=pc.baseline_accuracy, candidate_accuracy=pc.candidate_accuracy,
        delta_points=pc.delta_points,
        ci_low_points=_pct(st.interval.low) if st else None, ci_high_points=_pct(st.interval.high) if st else None,
        confidence=st.interval.confidence if st else None, p_value=st.paired.p_value if st else None,
        mde_points=_pct(st.mde) if st and st.mde is not None else None,
        harmful_flips=len(pc.harmful), harmful_items=pc.harmful_items, helpful_items=pc.helpful_items,
        errors=pc.errors, agreement=pc.agreement, aa_harmful=aa.harmful_items if aa else None,
        passed=verdict.pack_status(pc.pack) == "pass" if verdict else None,
        status=verdict.pack_status(pc.pack) if verdict else None,
        speed_only=pc.speed_only,
    )


def _field_rows(comparison: Comparison, base: list[ScoredItem], cand: list[ScoredItem]) -> list[FieldRow]:
    """Per pack and field: accuracy of both runs on the paired items, a paired bootstrap interval, flips."""
    cand_by_id = {s.item_id: s for s in cand}
    per: dict[tuple[str, str], dict[str, Any]] = {}
    for b in base:
        c = cand_by_id.get(b.item_id)
        if c is None:
            continue
        for name, bscore in b.fields.items():
            cscore = c.fields.get(name)
            c_out = "error" if c.error is not None else (cscore.outcome if cscore else "missing")
            d = per.setdefault((b.pack, name), {"kind": b.kinds.get(name, ""), "b": [], "c": [],
                                                "bc": [0, 0, 0], "cc": [0, 0, 0]})
            d["b"].append(_outcome_ok(bscore.outcome))
            d["c"].append(_outcome_ok(c_out))
            for counts, outcome in ((d["bc"], bscore.outcome), (d["cc"], c_out)):
                _count(counts, outcome, b.golds.get(name) is not None)
    packs = {pc.pack: pc for pc in comparison.packs}
    rows = []
    for (pack, name), d in sorted(per.items()):
        pc = packs.get(pack)
        interval = pc.stats.interval if pc and pc.stats else None
        b, c = np.asarray(d["b"], dtype=float), np.asarray(d["c"], dtype=float)
        low = high = None
        if interval is not None and len(b):
            iv = stats.bootstrap_accuracy_delta(b, c, n_resamples=interval.n_resamples,
                                                confidence=interval.confidence, seed=0)
            low, high = _pct(iv.low), _pct(iv.high)
        harmful = int(np.sum((b == 1) & (c == 0)))
        helpful = int(np.sum((b == 0) & (c == 1)))
        rows.append(FieldRow(
            pack=pack, field=name, kind=d["kind"], n=len(b), baseline_accuracy=float(b.mean()) if len(b) else 0.0,
            candidate_accuracy=float(c.mean()) if len(c) else 0.0,
            delta_points=_pct(float(c.mean() - b.mean())) if len(b) else 0.0, ci_low_points=low, ci_high_points=high,
            baseline_f1=_f1(d["bc"]), candidate_f1=_f1(d["cc"]), harmful_flips=harmful, helpful_flips=helpful,
        ))
    return rows


def _count(counts: list[int], outcome: str, present: bool) -> None:
    for i, n in enumerate(field_counts(outcome, present)):
        counts[i] += n


def _f1(counts: list[int]) -> float:
    tp, fp, fn = counts
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


# --------------------------------------------------------------------------- speed


# --------------------------------------------------------------------------- heatmaps

# cividis (colour-blind-safe, perceptually uniform), 11 stops from 0 to 1
_CIVIDIS = ["#00224e", "#123570", "#3b496c", "#575d6d", "#707173", "#8a8779", "#a59c74", "#c3b369", "#e1cc55",
            "#fee838", "#fee838"]
# blue (gain) - light grey - orange (loss), colour-blind-safe diverging; index 0 = -1 (loss), 8 = +1 (gain)
_DIVERGING = ["#b35806", "#e08214", "#fdb863", "#fee0b6", "#f2f2f2", "#c6dbef", "#6baed6", "#2171b5", "#08306b"]
DIFF_SATURATION_POINTS = 25.0


def _hex(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


def _lerp(stops: list[str], t: float) -> str:
    t = min(max(t, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(t), len(stops) - 2)
    f = t - i
    a, b = _hex(stops[i]), _hex(stops[i + 1])
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))


def _ink(fill: str) -> str:
    r, g, b = (v / 255 for v in _hex(fill))
    lum = 0.2126 * r ** 2.2 + 0.7152 * g ** 2.2 + 0.0722 * b ** 2.2
    return "#000000" if lum > 0.2 else "#ffffff"


def accuracy_fill(acc: float) -> str:
    return _lerp(_CIVIDIS[:-1], acc)


def difference_fill(points: float) -> str:
    return _lerp(_DIVERGING, 0.5 + points / (2 * DIFF_SATURATION_POINTS))


def _slices(item: ScoredItem, name: str) -> tuple[int | None, float | None]:
    """(context length, depth) of one gold field, from the item's metadata."""
    meta = item.meta
    length = meta.get("target_tokens")
    if not isinstance(length, int):
        length = meta.get("context_tokens") if isinstance(meta.get("context_tokens"), int) else None
    depth = meta.get("depth", meta.get("field_depth"))
    fields_meta = meta.get("fields")
    if not isinstance(depth, (int, float)) and isinstance(fields_meta, dict):
        depth = (fields_meta.get(name) or {}).get("depth")
    return length, (float(depth) if isinstance(depth, (int, float)) else None)


def _length_label(n: int, exact: bool) -> str:
    if not exact:
        return length_bucket(n)
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def _heatmaps(pack: str, base: list[ScoredItem], cand: list[ScoredItem], cand_name: str,
              base_name: str) -> HeatmapSet | None:
    """Field accuracy by context length x depth, for fields whose items carry both (needles, document fields)."""
    cand_by_id = {s.item_id: s for s in cand}
    cells: list[tuple[int, float, bool, bool]] = []
    for b in base:
        c = cand_by_id.get(b.item_id)
        if b.pack != pack or c is None:
            continue
        for name, bscore in b.fields.items():
            if b.golds.get(name) is None:
                continue
            length, depth = _slices(b, name)
            if length is None or depth is None:
                continue
            cscore = c.fields.get(name)
            c_out = "error" if c.error is not None else (cscore.outcome if cscore else "missing")
            cells.append((length, depth, _outcome_ok(bscore.outcome), _outcome_ok(c_out)))
    lengths = sorted({x[0] for x in cells})
    depths = sorted({x[1] for x in cells})
    if len(cells) < 2 or (len(lengths) < 2 and len(depths) < 2):
        return None
    exact_len = len(lengths) <= 12
    len_key = (lambda n: _length_label(n, True)) if exact_len else (lambda n: length_bucket(n))
    col_labels = list(dict.fromkeys(len_key(n) for n in lengths))
    if len(depths) <= 11:
        dep_key = lambda d: f"{d:.2f}"  # noqa: E731
        row_labels = [f"{d:.2f}" for d in depths]
    else:  # continuous depths (field positions): five bins
        edges = [0.2, 0.4, 0.6, 0.8, 1.01]
        names = ["0.0–0.2", "0.2–0.4", "0.4–0.6", "0.6–0.8", "0.8–1.0"]
        dep_key = lambda d: names[next(i for i, e in enumerate(edges) if d < e)]  # noqa: E731
        row_labels = [n for n in names if any(dep_key(d) == n for d in depths)]
    grid: dict[tuple[str, str], list[int]] = {}
    for length, depth, b_ok, c_ok in cells:
        g = grid.setdefault((dep_key(depth), len_key(length)), [0, 0, 0])
        g[0] += 1
        g[1] += b_ok
        g[2] += c_ok

    def acc_map(kind: str, run: str, idx: int) -> Heatmap:
        rows: list[list[HeatCell | None]] = []
        for r in row_labels:
            row: list[HeatCell | None] = []
            for col in col_labels:
                g = grid.get((r, col))
                if not g:
                    row.append(None)
                    continue
                acc = g[idx] / g[0]
                fill = accuracy_fill(acc)
                row.append(HeatCell(n=g[0], value=acc, label=f"{100 * acc:.0f}",
                                    tooltip=f"{run}: length {col}, depth {r}: {g[idx]}/{g[0]} correct ({100 * acc:.1f}%)",
                                    fill=fill, ink=_ink(fill)))
            rows.append(row)
        legend = [(f"{p}%", accuracy_fill(p / 100)) for p in (0, 25, 50, 75, 100)]
        return Heatmap(title=f"{run}: accuracy %", kind=kind, rows=row_labels, cols=col_labels, cells=rows,
                       legend=legend)

    diff_rows: list[list[HeatCell | None]] = []
    for r in row_labels:
        row = []
        for col in col_labels:
            g = grid.get((r, col))
            if not g:
                row.append(None)
                continue
            d = 100.0 * (g[2] - g[1]) / g[0]
            fill = difference_fill(d)
            row.append(HeatCell(n=g[0], value=d, label=f"{d:+.0f}" if round(d) else "0",
                                tooltip=f"{cand_name} − {base_name}: length {col}, depth {r}: {d:+.1f} points "
                                        f"({g[2]}/{g[0]} vs {g[1]}/{g[0]} correct)",
                                fill=fill, ink=_ink(fill)))
        diff_rows.append(row)
    s = DIFF_SATURATION_POINTS
    legend = [(f"{p:+.0f}" if p else "0", difference_fill(p)) for p in (-s, -s / 2, 0, s / 2, s)]
    diff = Heatmap(title=f"{cand_name} − {base_name}: points (orange: loss, blue: gain)", kind="difference",
                   rows=row_labels, cols=col_labels, cells=diff_rows, legend=legend)
    return HeatmapSet(pack=pack, unit="gold fields per cell; rows: depth of the value in the document, columns: "
                                       "context length in tokens",
                      baseline=acc_map("baseline", base_name, 1), candidate=acc_map("candidate", cand_name, 2),
                      difference=diff)


# --------------------------------------------------------------------------- item browser


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
    if cut <= 0:
        return prompt, ""
    return prompt[:cut], prompt[cut:]


def _highlight_strings(meta: dict[str, Any], fields: list[str]) -> list[tuple[str, int]]:
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


def _info(meta: dict[str, Any]) -> str:
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
    raw = json.dumps({"texts": texts, "details": details}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def _browser(report: Any, max_text_bytes: int) -> tuple[BrowserData, str, int, dict[str, list[FlipView]]]:
    base_run: RunResult = report.baseline
    cands: list[RunResult] = report.candidates
    base_scored = {s.item_id: s for s in report.scored[base_run.name]}
    cand_scored = [{s.item_id: s for s in report.scored[c.name]} for c in cands]
    packs: dict[str, int] = {}
    fields: dict[str, int] = {}
    outcome_idx = {o: i for i, o in enumerate(OUTCOMES)}
    subcodes: dict[str | None, int] = {None: 0}

    def idx(table: dict, key: Any) -> int:
        if key not in table:
            table[key] = len(table)
        return table[key]

    def sub(code: str | None) -> int:
        return idx(subcodes, code)

    kinds: dict[str, str] = {}
    texts = _Texts()
    items: list[list[Any]] = []
    details: list[list[Any]] = []
    heads: list[tuple[str, list[list[int]], list[str]]] = []  # per item, for the size budget
    rows: list[list[Any]] = []
    flips = 0
    noscript: dict[str, list[FlipView]] = {c.name: [] for c in cands}
    for item in base_run.items:
        b = base_scored.get(item.id)
        field_names = [f.name for f in item.fields]
        head, tail = _split_prompt(item.prompt if item.system is None else f"{item.system}\n\n{item.prompt}")
        spans = _spans(head, _highlight_strings(item.meta, field_names))
        heads.append((head, spans, field_names))

        def output(s: ScoredItem | None) -> int:
            if s is None:
                return -1
            if s.error is not None:
                return texts.add(f"error: {s.error}")
            return texts.add(_clip(s.output, OUTPUT_CHARS) if s.output is not None else None)

        i_item = len(items)
        cand_items = [cs.get(item.id) for cs in cand_scored]
        items.append([item.id, idx(packs, item.pack)])
        details.append([-1, texts.add(tail) if tail else -1, output(b), [output(c) for c in cand_items],
                        _info(item.meta), [], 0, -1])
        as_written: dict[str, str] = {}
        for f in item.fields:
            name = f.name
            kinds.setdefault(name, f.kind)
            gold_raw = f.gold
            gold = _gold_display(b, name) if b is not None else gold_raw
            if b is None:
                b_val, b_out, b_sub = None, "unanswered", None
            else:
                b_val = _display_value(b, name)
                b_out = "error" if b.error is not None else (b.fields[name].outcome if name in b.fields else "missing")
                b_sub = b.fields[name].subcode if name in b.fields and b.error is None else None
            b_ok = _outcome_ok(b_out)
            if gold_raw is not None and gold_raw != gold:
                as_written[name] = gold_raw
            b_ops = _flat_ops(gold, b_val) if _wants_diff(b_out, b_sub) else 0
            cells: list[Any] = []
            for c_name, c in zip((c.name for c in cands), cand_items):
                if c is None:
                    cells.append(None)
                    continue
                c_val = _display_value(c, name)
                c_out = "error" if c.error is not None else (c.fields[name].outcome if name in c.fields else "missing")
                c_sub = c.fields[name].subcode if name in c.fields and c.error is None else None
                if (c_val, c_out, c_sub) == (b_val, b_out, b_sub):
                    cells.append(0)
                    continue
                c_ok = _outcome_ok(c_out)
                # a baseline without an answer is not a flip (pairing reports it as missing)
                flip = 0 if b is None else (1 if b_ok and not c_ok else (-1 if c_ok and not b_ok else 0))
                flips += flip != 0
                cells.append([c_val, outcome_idx[c_out], sub(c_sub), flip,
                              _flat_ops(gold, c_val) if _wants_diff(c_out, c_sub) else 0])
                if flip == 1 and len(noscript[c_name]) < NOSCRIPT_FLIPS:
                    noscript[c_name].append(FlipView(
                        candidate=c_name, item_id=item.id, pack=item.pack, field=name, kind=f.kind, gold=gold,
                        baseline_value=b_val, candidate_value=c_val, candidate_outcome=c_out, subcode=c_sub,
                        gold_segments=diffs.segments(gold, c_val)  # type: ignore[arg-type]
                        if _wants_diff(c_out, c_sub) and diffs.diffable(gold, c_val) else None))
            rows.append([i_item, idx(fields, name), gold, 0 if b_val is not None and b_val == gold else b_val,
                         outcome_idx[b_out], sub(b_sub), b_ops, cells])
        if as_written:
            details[-1][7] = texts.add(json.dumps(as_written, ensure_ascii=False))

    # the shared documents, whole when they fit the budget, else cut around their highlights
    rows_bytes = len(json.dumps([items, rows], ensure_ascii=False, separators=(",", ":")))
    budget = min(max_text_bytes, max(1_000_000, MAX_PAYLOAD_BYTES - rows_bytes))
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
                detail[5] = [[u(s), u(e), idx(fields, names[f]) if f >= 0 else f] for s, e, f in moved]
            else:
                detail[5] = []
            detail[6] = cut
        blob = _pack_texts(t.texts, details)
        if len(blob) <= budget:
            break
    browser = BrowserData(
        baseline=base_run.name, candidates=[c.name for c in cands], packs=list(packs), fields=list(fields),
        kinds=[kinds.get(n, "") for n in fields], outcomes=OUTCOMES,
        subcodes=list(subcodes), items=items, rows=rows, run_dirs=[str(base_run.dir), *(str(c.dir) for c in cands)],
        flips=flips,
    )
    return browser, blob, len({d[0] for d in details if d[6]}), noscript


# --------------------------------------------------------------------------- the report


def build_report_data(report: Any, title: str | None = None, max_text_bytes: int = MAX_TEXT_BYTES,
                      capacity: CapacityInputs | None = None, speed: SpeedTable | None = None) -> ReportData:
    """Everything the HTML page shows, from a `CompareReport` (evals.api); `capacity`: the
    volume the capacity estimate is for; `speed`: the speed table when already computed."""
    base_name = report.baseline.name
    base_scored = report.scored[base_name]
    browser, blob, cut, noscript = _browser(report, max_text_bytes)
    aa = {pc.pack: pc for pc in report.noise_floor.packs} if report.noise_floor else {}
    sections = []
    for run, comp, verdict in zip(report.candidates, report.comparisons, report.verdicts):
        cand_scored = report.scored[run.name]
        heatmaps = [h for pc in comp.packs
                    if (h := _heatmaps(pc.pack, base_scored, cand_scored, run.name, base_name)) is not None]
        sections.append(CandidateSection(
            name=run.name, passed=verdict.passed, status=verdict.status,
            packs=[_pack_row(pc, verdict, aa.get(pc.pack)) for pc in comp.packs],
            fields=_field_rows(comp, base_scored, cand_scored), heatmaps=heatmaps,
            harmful_total=len(comp.harmful), helpful_total=len(comp.helpful), flips=noscript.get(run.name, []),
            missing_in_candidate=len(comp.missing_in_candidate), missing_in_baseline=len(comp.missing_in_baseline),
        ))
    noise = None
    if report.noise_floor is not None:
        nf = report.noise_floor
        noise = (f"Noise floor: {nf.candidate} (a repeat of the baseline) has "
                 f"{sum(pc.harmful_items for pc in nf.packs)} harmful flip(s) and "
                 f"{sum(pc.identical_outputs for pc in nf.packs)}/{sum(pc.n for pc in nf.packs)} identical outputs.")
    names = ", ".join(c.name for c in report.candidates)
    table = speed or speed_table(report, capacity)
    return ReportData(
        title=title or f"evalrun: {names} vs {base_name}",
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        passed=report.passed,
        status=report.status,
        baseline=_run_info(report.baseline, "baseline"),
        candidates=[_run_info(c, "candidate") for c in report.candidates],
        verdicts=[_verdict_view(v) for v in report.verdicts],
        sections=sections,
        speed=table.rows,
        speed_spread_note=table.spread_note,
        capacity_note=table.capacity_note,
        noise_floor=noise,
        browser=browser,
        texts_blob=blob,
        texts_cut=cut,
    )
