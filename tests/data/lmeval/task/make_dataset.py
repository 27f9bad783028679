"""Writes arith.jsonl and arith_fewshot.jsonl: the local lm-eval task's questions (deterministic)."""

import json
import random
from pathlib import Path


def rows(rng: random.Random, n: int) -> list[dict]:
    out = []
    for i in range(n):
        op = ("+", "-", "*")[i % 3]
        if op == "*":
            a, b = rng.randint(2, 12), rng.randint(2, 12)
            answer = a * b
        elif op == "-":
            a, b = rng.randint(10, 99), rng.randint(1, 9)
            answer = a - b
        else:
            a, b = rng.randint(1, 60), rng.randint(1, 40)
            answer = a + b
        out.append({"question": f"What is {a} {op} {b}?", "answer": str(answer)})
    return out


here = Path(__file__).parent
(here / "arith.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(random.Random(31), 240)))
(here / "arith_fewshot.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(random.Random(7), 6)))
