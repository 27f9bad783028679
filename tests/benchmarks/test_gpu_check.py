"""The prepared GPU check keeps working where no GPU is: the same script, every lever, on the CPU
(one item per pack, short prompts, short answers). It is the script a session with a CUDA device runs first,
so a lever that breaks it is found here, not on the device. The model is a tiny random Llama with the default model's attention shape: this checks
the script and each lever's proof of effect, not accuracy (each lever's accuracy on the real model is
tested in tests/runners and tests/cli)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DEFAULT_MODEL_HEADS, ROOT, write_tiny_model

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.mark.timeout(1800)
def test_every_lever_runs_on_the_cpu_and_proves_its_effect(tmp_path: Path, smol_dir: str) -> None:
    model = write_tiny_model(tmp_path / "model", smol_dir, **DEFAULT_MODEL_HEADS)  # the levers' group sizes fit
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gpu_check import LEVERS

    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--device", "cpu",
                           "--limit", "1", "--max-new-tokens", "4", "--model", str(model),
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
