"""How fast, and in how much memory, `evalrun import inspect` stores a large Inspect `.eval` log
(the target: 10,000 samples in under 10 s, memory that does not grow with the log).

The log is written by inspect_ai's own writer (`write_eval_log`): the real fp32 log in
tests/data/inspect, its samples repeated with new ids and inputs up to N. The import runs in a
fresh process, which prints its wall seconds and its peak RSS (and its RSS before the import,
once inspect_ai and evalrun are loaded), so the figures are the import's alone.

    python benchmarks/inspect_import_speed.py [N] [LOG.eval]   # LOG: kept, and reused when it exists
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import sys, time
from pathlib import Path
from evalrun.evals.imports import import_runs
import inspect_ai.log
rss = lambda: int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024  # own peak (ru_maxrss keeps the parent's across exec)
loaded = rss()
started = time.perf_counter()
[stored] = import_runs("inspect", [Path(sys.argv[1])], name="speed", out=Path(sys.argv[2]), log=lambda m: None)
print(stored.items, time.perf_counter() - started, loaded, rss())
"""


def write_log(path: Path, n: int) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    [real] = sorted((ROOT / "tests" / "data" / "inspect" / "float32").glob("*.eval"))
    log = read_eval_log(str(real))
    samples = log.samples or []
    log.samples = [samples[k % len(samples)].model_copy(update={
        "id": k + 1, "uuid": None,
        "input": samples[k % len(samples)].input if k < len(samples)
        else f"{samples[k % len(samples)].input} (copy {k // len(samples)})"}) for k in range(n)]
    write_eval_log(log, str(path))


def main(n: int, keep: Path | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = keep or Path(tmp) / f"speed_{n}.eval"
        started = time.perf_counter()
        if not path.exists():
            write_log(path, n)
        written = time.perf_counter() - started
        res = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(Path(tmp) / "runs")],
                             capture_output=True, text=True, cwd=ROOT)
        assert res.returncode == 0, res.stderr
        items, seconds, loaded, peak = res.stdout.split()[-4:]
        assert int(items) == n
        print(f"import of {n} Inspect samples ({path.stat().st_size / 1e6:.1f} MB .eval, written by inspect_ai in "
              f"{written:.1f} s): {float(seconds):.2f} s; peak RSS {float(peak):.0f} MB "
              f"({float(loaded):.0f} MB with evalrun and inspect_ai loaded) (target: under 10 s, bounded memory)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000, Path(sys.argv[2]) if len(sys.argv) > 2 else None)
