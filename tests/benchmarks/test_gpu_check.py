"""The prepared GPU check keeps working where no GPU is: the same script, every lever, on the CPU
with the real default model (one item per pack, short prompts, short answers). It is the script a session with
a CUDA device runs first, so a lever that breaks it is found here, not on the device."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.mark.timeout(1800)
def test_every_lever_runs_on_the_cpu_and_proves_its_effect(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gpu_check import LEVERS

    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--device", "cpu",
                           "--limit", "1", "--max-new-tokens", "4",
                           "--lengths", "needle_numbers=160,doc_fields=400", "--out", str(tmp_path / "runs"),
                           "--json", str(out)], capture_output=True, text=True, timeout=1700)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text())
    rows = {r["lever"]: r for r in data["rows"]}
    skipped = dict(data["skipped"])
    # every lever is either run or listed with the reason it could not be
    assert set(rows) | set(skipped) == {name for name, _ in LEVERS}
    assert "attn-flash2" in skipped and "flash" in skipped["attn-flash2"]
    for name, row in rows.items():
        assert row["status"] == "complete" and row["items"] == 2, name  # 1 item of each of the 2 demo packs
        assert 0 <= row["identical"] <= row["items"]
        assert row["proof"] != "-", f"{name} shows no effect"  # each lever says what it did
    assert "paged" in rows["paged-cb"]["proof"]
    assert rows["kv-fp8"]["kv_bytes_per_token"] < rows["attn-eager"]["kv_bytes_per_token"]
    # the table itself: one line per lever, printed in one run
    for name in rows:
        assert any(line.startswith(name) for line in proc.stdout.splitlines()), name
