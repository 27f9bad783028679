"""How fast `evalrun import lm-eval` stores a large sample log (the target: 10,000 samples in under 5 s).

The log is the real fp32 log in tests/data/lmeval, its 240 lines repeated with new
doc ids and prompts (each prompt_hash recomputed, as lm-eval writes it) up to N.
Prints the seconds of the import itself (read, check, store; wall and CPU, which
a busy machine separates) and of the whole command as a user runs it
(interpreter start included).

    python benchmarks/import_speed.py [N]
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_log(folder: Path, n: int) -> Path:
    [real] = sorted((ROOT / "tests" / "data" / "lmeval" / "float32").rglob("samples_arith_*.jsonl"))
    rows = [json.loads(line) for line in real.read_text().splitlines()]
    path = folder / "samples_arith_2026-01-01T00-00-00.000000.jsonl"
    with path.open("w") as fh:
        for k in range(n):
            row = dict(rows[k % len(rows)])
            prompt = row["arguments"]["gen_args_0"]["arg_0"] + f" (copy {k // len(rows)})" * (k >= len(rows))
            row["arguments"] = {"gen_args_0": {**row["arguments"]["gen_args_0"], "arg_0": prompt}}
            row["doc_id"], row["prompt_hash"] = k, hashlib.sha256(prompt.encode()).hexdigest()
            fh.write(json.dumps(row) + "\n")
    return path


def main(n: int) -> None:
    from evalrun.evals.imports import import_runs

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "log"
        folder.mkdir()
        write_log(folder, n)
        started, cpu = time.perf_counter(), time.process_time()
        [stored] = import_runs("lm-eval", [folder], name="speed", out=Path(tmp) / "runs", log=lambda m: None)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert stored.items == n and not stored.reused
        started = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "evalrun.cli", "import", "lm-eval", str(folder), "--name", "cli",
                              "--out", str(Path(tmp) / "runs")], capture_output=True, text=True, cwd=ROOT)
        command = time.perf_counter() - started
        assert res.returncode == 0, res.stderr
        size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        print(f"import of {n} lm-eval samples ({size:.1f} MB): {seconds:.2f} s in process "
              f"({n / seconds:,.0f} samples/s; {cpu:.2f} s of CPU); the whole `evalrun import lm-eval` command: {command:.2f} s "
              f"(target: under 5 s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
