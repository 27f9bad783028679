"""The collapse figure of issue 46 on a real runner: a needle pack answered about 90% right (a deterministic
OpenAI-compatible server, tests/fakes/openai_server.py ExactBackend, wrong on every tenth item) collapses to
about 10% through the fault instrument (rate 0.9, one digit changed, runners/fault.py) with the collapse canary
off; the baseline has 2 replicates (`--replicates 3`), so the flip rules test against an A/A rate, and the early
stop decides the FAIL within 20 paired items. The instrument's verdict is never a PASS (docs/gate.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from evalrun.evals.store import RunStore
from tests.conftest import run_cli
from tests.fakes.openai_server import ExactBackend, OpenAITestServer, gold_answers, items_of, served_config

NEEDLES = {"pack": "needle_numbers", "lengths": [256, 384, 512, 640, 768, 896], "depths": [0.0, 0.25, 0.5, 0.75, 1.0],
           "values": ["integer", "amount"]}
FAULT = {"fault": {"rate": 0.9, "mode": "digit", "packs": ["needle_numbers"]}}
TEXT = "is a measuring instrument (fault injection: rate 0.9, digit, packs needle_numbers), not a candidate: " \
       "it can fail, never pass"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    items = items_of([NEEDLES])
    wrong = {it.id for i, it in enumerate(items) if i % 10 == 9}  # the baseline's 10%: the same on every run
    with OpenAITestServer(ExactBackend(gold_answers(items, lambda it: it.id in wrong))) as server:
        yield server.base_url


def _instrument(tmp: Path, url: str, name: str, instrument: dict[str, Any]) -> Path:
    path = served_config(tmp / f"{name}.yaml", name, url, [NEEDLES], gate={"collapse": False})
    data = yaml.safe_load(path.read_text()) | {"instrument": instrument}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_needle_collapse_to_ten_percent_stops_within_twenty_items(url: str, tmp_path: Path) -> None:
    out, base = tmp_path / "runs", served_config(tmp_path / "base.yaml", "base", url, [NEEDLES])
    cand = _instrument(tmp_path, url, "faulty", FAULT)
    res = run_cli("compare", str(base), str(cand), "--out", str(out), "--replicates", "3",
                  "--json", str(tmp_path / "v.json"), "--markdown", str(tmp_path / "r.md"))
    assert res.returncode == 1, res.stdout + res.stderr
    verdict = json.loads((tmp_path / "v.json").read_text())["verdicts"][0]
    run = next(out.glob("faulty-*"))
    manifest = json.loads((run / "manifest.json").read_text())
    stop = manifest["early_stop"]
    print(f"\nneedle_numbers 90% -> ~10% (fault rate 0.9, canary off, 2 baseline replicates): FAIL decided at "
          f"{stop['at']} of {stop['of']} paired items ({'; '.join(stop['rules'])})")
    assert manifest["status"] == "stopped" and stop["at"] <= 20 and stop["of"] == 60
    assert len(RunStore(run).read_samples()) == stop["at"]
    assert all(r.startswith("needle_numbers: max_harmful_flips[") for r in stop["rules"])
    assert verdict["status"] == "fail" and any(r["status"] == "fail" for r in verdict["rules"])
    assert all(r["rule"] != "collapse" for r in verdict["rules"])
    assert any("collapse is disabled by the gate" in n for n in verdict["notes"])
    assert any(g["reason"] == f"faulty {TEXT}" for g in verdict["gaps"])
    record = manifest["instrument"]
    assert record["fault"]["rate"] == 0.9 and record["items"] == len(record["planted"]) > stop["at"] // 2
    assert "| faulty | measuring instrument (fault injection: rate 0.9, digit" in (tmp_path / "r.md").read_text()
    assert "measuring instrument (fault injection: rate 0.9" in " ".join(res.stdout.split())


def test_an_instrument_that_changes_nothing_is_incomplete_never_a_pass(url: str, tmp_path: Path) -> None:
    out, base = tmp_path / "runs", served_config(tmp_path / "base.yaml", "base", url, [NEEDLES])
    cand = _instrument(tmp_path, url, "idle", {"fault": {"rate": 1e-9}})
    res = run_cli("compare", str(base), str(cand), "--out", str(out), "--json", str(tmp_path / "v.json"))
    assert res.returncode == 4, res.stdout + res.stderr
    verdict = json.loads((tmp_path / "v.json").read_text())["verdicts"][0]
    assert verdict["status"] == "incomplete" and not any(r["status"] == "fail" for r in verdict["rules"])
    assert [g["reason"] for g in verdict["gaps"]] == ["idle is a measuring instrument (fault injection: rate 1e-09, "
                                                      "digit, every pack), not a candidate: it can fail, never pass"]
    swapped = run_cli("compare", str(cand), str(base), "--out", str(out))
    assert swapped.returncode == 2 and "baseline idle is a measuring instrument" in swapped.stdout + swapped.stderr
    fresh = run_cli("compare", str(cand), str(base), "--out", str(tmp_path / "other"))  # refused before generating
    assert fresh.returncode == 2 and not (tmp_path / "other").exists(), fresh.stdout + fresh.stderr
    calibrated = run_cli("calibrate", str(cand), "--repeats", "3", "--out", str(tmp_path / "other"))
    assert calibrated.returncode == 2 and "instrument" in calibrated.stdout + calibrated.stderr
