"""Benchmark: the HTML report for 10,000 items x 3 candidates, opened in Chromium.

Builds synthetic runs in memory (no model): needle items from the real
`needle_numbers` pack (1k-8k token haystacks, every one unique) and invoice
documents asked about field by field (8 questions share one document) and as
one JSON answer with 8 fields. Three candidates damage values the way lossy
KV caches do (dropped, changed, transposed digits; missing answers); one is
marked emulated. Then: `api.compare_results`, `build_view`,
`render_html`, and Chromium (Debian's, driven by Playwright) loads the file
until the item browser's first page exists. Targets: under 10 MB, under 3 s.

    python benchmarks/html_10k.py [--items 10000] [--candidates 3] [--out reports-out/html_10k.html] [--strict]
    python benchmarks/html_10k.py --needles 0 --json-docs 1   # worst case for rows: 8 fields on every item
    python benchmarks/html_10k.py --drift   # with teacher-forced drift: KL heatmaps, a KL strip per item
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from evalrun.evals import api  # noqa: E402
from evalrun.evals.drift import Drift, FlipNote, TokenDrift  # noqa: E402
from evalrun.evals.results import RunResult  # noqa: E402
from evalrun.reports.view import build_view  # noqa: E402
from evalrun.contract.types import Field, Generation, Item  # noqa: E402
from evalrun.reports.formats.html import render_html  # noqa: E402
from evalrun.tasks.needle_numbers import NeedleParams, build as build_needles  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_10k import FIELDS, synthetic_values  # noqa: E402

TARGET_MB, TARGET_S = 10.0, 3.0
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CLAUSES = [
    "Payment is due within the agreed term; late payments accrue interest at the statutory rate.",
    "Goods remain the property of the supplier until the invoice has been paid in full.",
    "Please quote the invoice number on every remittance and on all correspondence.",
    "Complaints about the delivered goods must be made in writing within fourteen days.",
    "The prior-year total for the same services was reported separately in the annual statement.",
    "All amounts are stated in euro unless another currency is named in the line item.",
    "Delivery took place at the customer's warehouse in the presence of the site manager.",
    "This document was generated electronically and is valid without a signature.",
]
# candidates: name, share of fields damaged, share of damaged answers that are dropped, emulated methods
CANDIDATES = [("int4kv", 0.02, 0.1, []), ("int2kv", 0.25, 0.4, []), ("sparse50", 0.01, 0.0, ["activation_sparsity"]),
              ("evict", 0.05, 0.3, []), ("fp8kv", 0.005, 0.0, [])]

def _count(text: str) -> int:
    return max(1, len(text) // 4)


def _document(rng: random.Random, values: dict[str, str | None], chars: int) -> tuple[str, dict[str, dict]]:
    facts = {k: f"The {k.replace('_', ' ')} stated on this invoice is {v}." for k, v in values.items() if v}
    body = [rng.choice(CLAUSES) for _ in range(max(8, chars // 85))]
    spots = sorted(rng.sample(range(len(body)), len(facts)))
    for (name, sentence), at in zip(facts.items(), spots):
        body.insert(at, sentence)
    text = "INVOICE\n\n" + " ".join(body)
    return text, {k: {"depth": round(text.index(s) / len(text), 3), "source": s} for k, s in facts.items()}


def _damage(value: str, rng: random.Random) -> str:
    digits = [i for i, ch in enumerate(value) if ch.isdigit()]
    if not digits:
        return value[:-2]
    i = rng.choice(digits)
    how = rng.random()
    if how < 0.5:
        return value[:i] + value[i + 1:]
    if how < 0.8:
        return value[:i] + str((int(value[i]) + 1) % 10) + value[i + 1:]
    j = min(i + 1, len(value) - 1)
    return value[:i] + value[j] + value[i] + value[j + 1:] if j > i else value + "0"


def build_items(n: int, seed: int = 0, needles: float = 0.4, json_docs: float = 0.2) -> list[Item]:
    """Shares of needles and of JSON documents (8 fields); the rest asks about documents one field at a time."""
    rng = random.Random(seed)
    items: list[Item] = []
    n_needles, n_json = int(n * needles), int(n * json_docs)
    s = 0
    while len(items) < n_needles:
        params = NeedleParams(seed=s, lengths=[1024, 2048, 4096, 8192],
                              depths=[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
        for it in build_needles(params, _count)[: n_needles - len(items)]:
            items.append(it.model_copy(update={"id": f"{it.id}-s{s}"}))
        s += 1
    doc = 0
    while len(items) < n:
        values = synthetic_values(rng)
        length = rng.choice([1024, 2048, 4096])
        text, where = _document(rng, values, length * 3)
        json_mode = len(items) >= n - n_json
        base = {"doc_id": f"INV{doc:05d}", "doc_type": "invoice", "target_tokens": length}
        if json_mode:
            prompt = f"Read the invoice below and extract the fields listed after it.\n\n{text}\n\n" \
                     f"Answer with one JSON object with the keys {', '.join(k for k, _ in FIELDS)}."
            items.append(Item(id=f"docs_json/INV{doc:05d}", pack="doc_fields_json", prompt=prompt,
                              fields=[Field(name=k, kind=kind, gold=values[k]) for k, kind in FIELDS],  # type: ignore[arg-type]
                              meta={**base, "answer_format": "json", "context_tokens": _count(prompt),
                                    "fields": {k: where.get(k, {"depth": None, "source": None}) for k, _ in FIELDS}}))
        else:
            for k, kind in FIELDS:
                if len(items) >= n - n_json:
                    break
                prompt = f"Read the invoice below and answer the question after it.\n\n{text}\n\n" \
                         f"What is the {k.replace('_', ' ')} of this invoice? Answer with the value only."
                w = where.get(k, {"depth": None, "source": None})
                items.append(Item(id=f"docs/INV{doc:05d}/{k}", pack="doc_fields", prompt=prompt,
                                  fields=[Field(name=k, kind=kind, gold=values[k])],  # type: ignore[arg-type]
                                  meta={**base, "answer_format": "text", "context_tokens": _count(prompt),
                                        "field": k, "field_depth": w["depth"], "source": w["source"]}))
        doc += 1
    return items


def _answer(item: Item, rng: random.Random, damage: float, drop: float) -> str:
    def value(f: Field) -> str | None:
        if f.gold is None:
            return None
        if rng.random() < damage:
            return None if rng.random() < drop else _damage(f.gold, rng)
        return f.gold

    if item.meta.get("answer_format") == "json":
        return json.dumps({f.name: value(f) for f in item.fields})
    v = value(item.fields[0])
    return f"The answer is {v}." if v is not None else "I could not find it in the text."


def run_result(name: str, items: list[Item], seed: int, damage: float, drop: float, emulated: list[str],
               seconds_per_item: float) -> RunResult:
    rng = random.Random(f"{name}:{seed}")
    gens = {}
    for k, it in enumerate(items):
        batch = 8
        gens[it.id] = Generation(item_id=it.id, pack=it.pack, prompt_hash=it.prompt_hash,
                                 output=_answer(it, rng, damage, drop), prompt_tokens=_count(it.prompt),
                                 new_tokens=rng.randint(8, 40), seconds=seconds_per_item * batch * rng.uniform(0.9, 1.1),
                                 batch_size=batch)
    accel = {} if name == "baseline" else {"kv_cache": {"quant": name, "backend": "synthetic"}}
    if emulated:
        accel = {m: {"sparsity": 0.5} for m in emulated}
    manifest = {"name": name, "device": "cuda", "dtype": "bfloat16", "config": {"acceleration": accel, "model": "synthetic"},
                "emulated": emulated, "load_seconds": 3.2,
                "effects": {k: {"kv_bytes_ratio": 0.27} for k in accel if k == "kv_cache"}}
    return RunResult(name, Path(f"runs/{name}-synthetic"), items, gens, manifest)


def synthetic_report(n_items: int, n_candidates: int, seed: int = 0, needles: float = 0.4,
                     json_docs: float = 0.2):  # type: ignore[no-untyped-def]
    items = build_items(n_items, seed, needles, json_docs)
    base = run_result("baseline", items, seed, 0.01, 0.5, [], 0.050)
    cands = [(run_result(name, items, seed, damage, drop, emulated, 0.050 / (1.3 + 0.2 * i)), None)
             for i, (name, damage, drop, emulated) in enumerate(CANDIDATES[:n_candidates])]
    return api.compare_results(base, cands)


def synthetic_drift(report, seed: int = 0):  # type: ignore[no-untyped-def]
    """Drift for every candidate on every item, as `compare --drift` would attach it: each answer cut into
    its `new_tokens` pieces, a per-token KL (log-normal, larger for a more damaging candidate), about 3% of
    tokens with another top-1, and a flip note per harmful flip."""
    rng = np.random.default_rng(seed)
    tokens: dict[str, list[str]] = {}
    for item_id, g in report.baseline.generations.items():
        text, n = g.output or "", max(1, g.new_tokens)
        cuts = [round(k * len(text) / n) for k in range(n + 1)]
        tokens[item_id] = [text[a:b] for a, b in zip(cuts, cuts[1:])]
    with_drift = []
    for k, cand in enumerate(report.candidates):
        run, comp = cand.run, cand.comparison
        per_item = {}
        for item_id, pieces in tokens.items():
            n = len(pieces)
            per_item[item_id] = TokenDrift(kl=rng.lognormal(-7 + 2 * k, 2.0, n), same_top1=rng.random(n) > 0.03,
                                           dp=rng.normal(0, 0.01, n), margin=rng.random(n))
        notes = [FlipNote(f.item_id, f.field, 3, 0.9, 0.06, 1.3, False) for f in comp.harmful]
        drift = Drift(run.name, [], None, flips=notes, per_item=per_item, tokens=tokens)
        with_drift.append(dataclasses.replace(cand, drift=drift))
    return dataclasses.replace(report, candidates=tuple(with_drift))  # the records are frozen: a new report


def chromium_load_seconds(path: Path, repeats: int = 3) -> tuple[list[float], dict[str, float]]:
    """Seconds from navigation to the item browser's first page, per fresh page; plus interaction timings."""
    from playwright.sync_api import sync_playwright

    loads: list[float] = []
    extra: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu",
                                                                     "--disable-background-networking"])
        for k in range(repeats):
            page = browser.new_page()
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            t = time.perf_counter()
            page.goto(path.resolve().as_uri(), timeout=60_000)
            page.wait_for_selector("#browser-ready", state="attached", timeout=60_000)
            loads.append(time.perf_counter() - t)
            if k == 0:
                extra["requests besides the file"] = float(len([u for u in requests if not u.startswith("file://")]))
                t = time.perf_counter()
                page.click("#f-flipped")
                page.wait_for_function("document.getElementById('count').textContent.indexOf('flipped') < 0")
                extra["flipped-only off: re-filter + render s"] = time.perf_counter() - t
                t = time.perf_counter()
                page.click("#item-rows tr button")
                page.wait_for_selector("tr.detail pre", timeout=30_000)
                extra["first expand (inflate all texts) s"] = time.perf_counter() - t
                extra["KL strip tokens in the opened item"] = float(page.locator("tr.detail .kl-strip span").count())
            page.close()
        browser.close()
    return loads, extra


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--candidates", type=int, default=3, choices=range(1, len(CANDIDATES) + 1))
    parser.add_argument("--needles", type=float, default=0.4, help="share of needle items (default 0.4)")
    parser.add_argument("--json-docs", type=float, default=0.2,
                        help="share of JSON-answer documents with 8 fields each (default 0.2; 1.0: 80,000 field rows)")
    parser.add_argument("--out", type=Path, default=Path("reports-out/html_10k.html"))
    parser.add_argument("--no-browser", action="store_true", help="only build and measure the file")
    parser.add_argument("--drift", action="store_true", help="attach synthetic drift to every candidate and item")
    parser.add_argument("--strict", action="store_true", help="exit 1 when over a target")
    args = parser.parse_args()
    t = time.perf_counter()
    report = synthetic_report(args.items, args.candidates, needles=args.needles, json_docs=args.json_docs)
    if args.drift:
        report = synthetic_drift(report)
    t_compare = time.perf_counter() - t
    t = time.perf_counter()
    data = build_view(report)
    t_data = time.perf_counter() - t
    t = time.perf_counter()
    path = render_html(data, args.out)
    t_render = time.perf_counter() - t
    mb = path.stat().st_size / 1e6
    rows = len(data.browser.rows)
    print(f"  synthetic runs + compare_results   {t_compare:7.2f} s")
    print(f"  build_view                         {t_data:7.2f} s")
    print(f"  render_html                        {t_render:7.2f} s")
    print(f"  items {len(data.browser.items)}, field rows {rows}, candidates {args.candidates}, "
          f"field results {rows * args.candidates}, harmful+helpful flips {data.browser.flips}, "
          f"documents stored as excerpts {data.texts_cut}")
    print(f"  size {mb:.2f} MB (texts blob {len(data.texts_blob) / 1e6:.2f} MB)")
    ok = mb < TARGET_MB
    if not args.no_browser:
        if not Path(CHROMIUM).exists():
            print("chromium not found: load time not measured")
            return 1 if args.strict else 0
        loads, extra = chromium_load_seconds(path)
        load = statistics.median(loads)
        for k, v in extra.items():
            print(f"  {k:<38} {v:.2f}")
        print(f"  chromium load to first page of rows  {', '.join(f'{x:.2f}' for x in loads)} s (median {load:.2f})")
        ok = ok and load < TARGET_S and extra.get("requests besides the file", 0) == 0
        print(f"html_10k: {args.items} items x {args.candidates} candidates: {mb:.2f} MB (target < {TARGET_MB:g}), "
              f"Chromium load {load:.2f} s (target < {TARGET_S:g}): {'PASS' if ok else 'FAIL'}; report at {path}")
    else:
        print(f"html_10k: {args.items} items x {args.candidates} candidates: {mb:.2f} MB; report at {path}")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    raise SystemExit(main())
