"""Confirmed losses on a deterministic engine, end to end: two OpenAI-compatible servers whose
answers are exact and never change (tests/fakes/openai_server.py ExactBackend), a baseline that
always gets six amounts right and a candidate that always loses two of them. With zero measured
noise a Fisher test against the A/A rate has no power at two flips (about (1/(K+1))^x), so the
flips the re-asks confirm must count on their own; and `report` on the same runs must use the
replicates `compare` used, never others it finds stored beside the baseline."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.conftest import run_cli
from tests.fakes.openai_server import ExactBackend, OpenAITestServer, ServerState

KEY_ENV = "EVALRUN_TEST_EXACT_KEY"
KEY = "sk-exact-test-0123"
AMOUNTS = {f"r{i}": f"EUR {100 + 7 * i}.{10 + i:02d}" for i in range(1, 7)}
LOST = {"r2", "r5"}
RECORD = re.compile(r"Record (r\d+)\. The amount due is (EUR [\d.]+)\.")


def answer_from(prompt: str, lose: set[str]) -> str:
    """The amount the record states, exactly; a wrong one for the records in `lose`."""
    m = RECORD.search(prompt)
    if m is None:
        return "not found"
    return "EUR 0.00" if m.group(1) in lose else m.group(2)


@pytest.fixture
def servers() -> Iterator[tuple[OpenAITestServer, OpenAITestServer]]:
    with OpenAITestServer(ExactBackend(lambda p: answer_from(p, set())), ServerState(api_key=KEY)) as base, \
            OpenAITestServer(ExactBackend(lambda p: answer_from(p, LOST)), ServerState(api_key=KEY)) as cand:
        yield base, cand


def write_configs(tmp: Path, base_url: str, cand_url: str) -> tuple[Path, Path]:
    data = tmp / "records.jsonl"
    data.write_text("".join(json.dumps({"id": k, "text": f"Record {k}. The amount due is {v}.", "total": v}) + "\n"
                            for k, v in AMOUNTS.items()), encoding="utf-8")
    base: dict[str, Any] = {
        "name": "exact", "runner": "openai", "model": "smollm2-135m",
        "openai": {"base_url": base_url, "api_key_env": KEY_ENV, "backoff": 0.05, "concurrency": 1},
        "generation": {"max_new_tokens": 16},
        "tasks": [{"pack": "files", "name": "records", "path": str(data), "id_column": "id", "mode": "per_field",
                   "document": "{text}",
                   "fields": {"total": {"type": "amount", "question": "What is the amount due?"}}}],
    }
    (tmp / "base.yaml").write_text(yaml.safe_dump(base), encoding="utf-8")
    (tmp / "cand.yaml").write_text(yaml.safe_dump({"extends": "base.yaml", "name": "lossy",
                                                    "openai": {"base_url": cand_url}}), encoding="utf-8")
    return tmp / "base.yaml", tmp / "cand.yaml"


def _compare(base: Path, cand: Path, out: Path, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli("compare", str(base), str(cand), "--out", str(out), "--no-early-stop", *extra,
                   env={KEY_ENV: KEY}, timeout=600)


def _runs(out: Path) -> dict[str, Path]:
    return {json.loads((d / "manifest.json").read_text())["name"] + (f"~r{j}" if (j := json.loads(
        (d / "manifest.json").read_text()).get("replicate", 0)) else ""): d for d in out.iterdir() if d.is_dir()}


@pytest.mark.slow
def test_confirmed_losses_fail_with_replicates_and_report_agrees(servers, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base_srv, cand_srv = servers
    base, cand = write_configs(tmp_path, base_srv.base_url, cand_srv.base_url)
    out = tmp_path / "runs"
    plain = _compare(base, cand, out)
    assert plain.returncode == 1, plain.stdout + plain.stderr
    noisy = _compare(base, cand, out, "--replicates", "3", "--confirm", "3", "--json", str(tmp_path / "v.json"))
    assert noisy.returncode == 1, noisy.stdout + noisy.stderr
    text = " ".join(noisy.stdout.split())
    assert "confirmed by re-asking count as losses" in text
    assert "the test rejects only from" in text or "the test rejects no flip count" in text
    verdict = json.loads((tmp_path / "v.json").read_text())["verdicts"][0]
    assert verdict["status"] == "fail"
    assert [Path(p).name for p in verdict["replicates"]] == [d.name for d in sorted(
        (d for d in out.iterdir() if d.name.startswith("exact-") and d.name[-3:-1] == "-r"), key=lambda d: d.name)]
    runs = _runs(out)
    again = run_cli("report", str(runs["exact"]), str(runs["lossy"]), env={KEY_ENV: KEY})
    assert again.returncode == 1, again.stdout + again.stderr
    assert "baseline replicates:" in again.stdout


@pytest.mark.slow
def test_report_uses_the_replicates_compare_used(servers, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Replicates stored by an earlier `--replicates 3` compare are not picked up by a `report` of a
    comparison gated without them: both exit 1 (every flip counts), and both name what they used."""
    base_srv, cand_srv = servers
    base, cand = write_configs(tmp_path, base_srv.base_url, cand_srv.base_url)
    out = tmp_path / "runs"
    first = _compare(base, cand, out, "--replicates", "3")  # stores the baseline's replicates
    assert first.returncode in (0, 1), first.stdout + first.stderr
    plain = _compare(base, cand, out)  # the same candidate, gated without them
    assert plain.returncode == 1, plain.stdout + plain.stderr
    runs = _runs(out)
    again = run_cli("report", str(runs["exact"]), str(runs["lossy"]), env={KEY_ENV: KEY})
    assert again.returncode == plain.returncode, again.stdout + again.stderr
    assert "baseline replicates: none" in " ".join(plain.stdout.split())
    assert "baseline replicates: none" in " ".join(again.stdout.split())
    asked = run_cli("report", str(runs["exact"]), str(runs["lossy"]), "--replicates", "3", env={KEY_ENV: KEY})
    assert "baseline replicates: 2" in " ".join(asked.stdout.split()), asked.stdout + asked.stderr
