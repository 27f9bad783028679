"""Time score_field on a realistic, seeded mix of 100,000 (kind, gold, pred).

    python benchmarks/field_scoring.py [--n 100000] [--seed 0] [--strict]

Mostly short values (exact, reformatted or slightly wrong), some free-text
sentences, some missing answers and decoys. Only the scoring loop is timed, in
CPU seconds of this single-threaded process (one core), with caches cold. Exits non-zero when over the
target only with --strict, so a loaded CI machine does not fail the build.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals.scoring import score_field  # noqa: E402

TARGET_S = 5.0
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
WORDS = ("acme global widget industrial supply holdings north river consulting "
         "services limited partners bank trust capital systems data logistics").split()
STATUSES = ["paid", "unpaid", "overdue", "cancelled"]
SYNONYMS = {"settled": "paid", "open": "unpaid", "late": "overdue", "void": "cancelled"}


def _amount_text(r: random.Random, v: Decimal, cur: str) -> str:
    neg = v < 0
    s = f"{abs(v):,.2f}"
    style = r.randrange(6)
    if style == 1:
        s = s.replace(",", "X").replace(".", ",").replace("X", ".")
    elif style == 2:
        s = s.replace(",", " ").replace(".", ",")
    elif style == 3:
        s = s.replace(",", "")
    if neg:
        s = r.choice([f"-{s}", f"({s})", f"{s}-"])
    return r.choice([s, f"{cur} {s}", f"{s} {cur}", f"{'€' if cur == 'EUR' else '$'}{s}"])


def _mutate_digits(r: random.Random, s: str) -> str:
    idx = [i for i, c in enumerate(s) if c.isdigit()]
    if len(idx) < 2:
        return s + "1"
    i = r.choice(idx[:-1])
    op = r.randrange(3)
    if op == 0:
        return s[:i] + s[i + 1:]
    if op == 1:
        return s[:i] + str(r.randrange(10)) + s[i:]
    j = i + 1
    return s[:i] + s[j] + s[i] + s[j + 1:] if s[j].isdigit() else s[:i] + "7" + s[i + 1:]


def make_case(r: random.Random) -> tuple[str, str | None, object, dict]:
    kind = r.choices(["amount", "number", "date", "id", "text", "enum"], [30, 10, 25, 15, 12, 8])[0]
    opts: dict = {}
    if kind in ("amount", "number"):
        v = Decimal(r.randrange(-10**7, 10**9)) / 100
        if kind == "number" or r.random() < 0.7:
            v = abs(v)
        cur = r.choice(["EUR", "USD", "GBP"])
        gold = f"{v:.2f} {cur}" if kind == "amount" else (f"{v:.1f}%" if r.random() < 0.2 else f"{v:.2f}")
        value = _amount_text(r, v, cur) if kind == "amount" else f"{v:,.2f}"
        label = "total amount due" if kind == "amount" else "value"
    elif kind == "date":
        y, m, d = r.randrange(1990, 2030), r.randrange(1, 13), r.randrange(1, 29)
        gold = f"{y:04d}-{m:02d}-{d:02d}"
        value = r.choice([gold, f"{d} {MONTHS[m - 1]} {y}", f"{MONTHS[m - 1]} {d}, {y}",
                          f"{d:02d}/{m:02d}/{y}", f"{d:02d}.{m:02d}.{y}", f"{y}年{m}月{d}日"])
        label = "invoice date"
    elif kind == "id":
        gold = f"{r.choice(['INV', 'PO', 'ORD'])}-{r.randrange(2000, 2030)}-{r.randrange(10000):04d}"
        value = r.choice([gold, gold.replace("-", " "), gold.lower(), gold.replace("-", "")])
        label = "invoice number"
    elif kind == "text":
        gold = " ".join(r.choice(WORDS).capitalize() for _ in range(r.randrange(2, 5)))
        value = r.choice([gold, gold.upper(), gold + ".", gold[: max(3, len(gold) - 4)]])
        label = "supplier name"
    else:
        gold = r.choice(STATUSES)
        opts = {"allowed": STATUSES, "synonyms": SYNONYMS}
        value = r.choice([gold, gold.upper(), next(k for k, v in SYNONYMS.items() if v == gold), "pending"])
        label = "status"
    roll = r.random()
    if roll < 0.05:
        return kind, gold, r.choice([None, "", "N/A", "not found"]), opts
    if roll < 0.10:
        return kind, None, r.choice([None, "N/A", value]), opts  # decoy
    if roll < 0.25:
        return kind, gold, f"The {label} is {value}.", opts
    if roll < 0.40 and kind in ("amount", "number", "id"):
        return kind, gold, _mutate_digits(r, value), opts
    if roll < 0.42:
        return kind, gold, r.choice([12345, 14851.2, True, ["a", "b"]]), opts
    return kind, gold, value, opts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strict", action="store_true", help="exit 1 when over the target")
    args = ap.parse_args(argv)
    r = random.Random(args.seed)
    cases = [make_case(r) for _ in range(args.n)]
    w0, c0 = time.perf_counter(), time.process_time()
    for kind, gold, pred, opts in cases:
        score_field(kind, gold, pred, **opts)
    wall, dt = time.perf_counter() - w0, time.process_time() - c0
    target = TARGET_S * args.n / 100_000
    ok = dt < target
    # CPU seconds of this (single-threaded) process: one core's worth of work,
    # not inflated when other jobs share the machine; wall time shown beside it.
    print(f"field_scoring: {args.n} scores in {dt:.2f} s ({args.n / dt:,.0f}/s; wall {wall:.2f} s); "
          f"target < {target:g} s: {'PASS' if ok else 'FAIL'}")
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
