"""Coverage against the baseline's plan, through the CLI as CI runs it, against a deterministic
OpenAI-compatible server whose answers are exact (tests/fakes/openai_server.py `gold_answers`): a candidate that
drops a pack, was stored with `run --limit 1`, is compared with a baseline that raised, or is
judged by a gate leaving a pack without a rule is exit 4 naming what is missing (all were exit 0);
--subset passes on the shared items and says SUBSET in every output."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator

import pytest

from evalrun.contract.types import Generation
from evalrun.evals.gate import NO_RULE
from tests.conftest import run_cli
from tests.fakes.openai_server import ExactBackend, OpenAITestServer, gold_answers, items_of, served_config

NEEDLES = {"pack": "needle_numbers", "lengths": [256, 384], "depths": [0.0, 0.5, 1.0], "values": ["integer"]}
DOCS = {"pack": "doc_fields", "documents": 4, "lengths": [600], "fields": ["total", "due_date"]}
OOM = "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """An exact server (the baseline's) and a lossy one that loses every document answer but the
    first, with the baseline stored."""
    root = tmp_path_factory.mktemp("coverage")
    items = items_of([NEEDLES, DOCS])
    first_doc = next(it.id for it in items if it.pack == "doc_fields")
    lossy = ExactBackend(gold_answers(items, wrong=lambda it: it.pack == "doc_fields" and it.id != first_doc))
    with OpenAITestServer(ExactBackend(gold_answers(items))) as exact, OpenAITestServer(lossy) as lossy_srv:
        base = served_config(root / "base.yaml", "base", exact.base_url, [NEEDLES, DOCS])
        res = run_cli("run", str(base), "--out", str(root / "runs"))
        assert res.returncode == 0, res.stdout + res.stderr
        [base_dir] = (root / "runs").iterdir()
        yield {"root": root, "items": items, "base": base, "base_dir": base_dir, "lossy": lossy_srv.base_url}


def _flat(res) -> str:  # type: ignore[no-untyped-def]
    return " ".join((res.stdout + res.stderr).split())


def _formats(out: Path) -> list[str]:
    return ["--html", str(out / "r.html"), "--junit", str(out / "j.xml"), "--markdown", str(out / "s.md"),
            "--json", str(out / "r.json")]


@pytest.mark.slow
def test_a_dropped_pack_is_exit_4_and_subset_says_so_everywhere(setup: dict, tmp_path: Path) -> None:
    drop = served_config(tmp_path / "drop.yaml", "dropper", setup["lossy"], [NEEDLES])
    args = ("compare", str(setup["base"]), str(drop), "--out", str(setup["root"] / "runs"))
    res = run_cli(*args)
    assert res.returncode == 4, _flat(res)
    assert "doc_fields: 0 item(s) asked by both runs, 6 by the baseline alone" in _flat(res)
    assert "dropper (" in _flat(res) and "does not ask this pack at all" in _flat(res)

    out = tmp_path / "out"
    sub = run_cli(*args, "--subset", *_formats(out))
    assert sub.returncode == 0, _flat(sub)
    assert "verdict: PASS" in sub.stdout and "SUBSET: only the items both runs asked" in _flat(sub)
    assert "SUBSET" in (out / "s.md").read_text().splitlines()[0]
    data = json.loads((out / "r.json").read_text())
    assert data["status"] == "pass" and data["summary"].startswith("SUBSET") and data["counts"]["subset"] == 1
    assert "doc_fields" in data["verdicts"][0]["subset"]
    summary = ET.parse(out / "j.xml").getroot().find("testsuite/properties/property[@name='summary']")
    assert summary.get("value").startswith("SUBSET")
    assert 'id="verdict-text">verdict: PASS (SUBSET' in (out / "r.html").read_text()


@pytest.mark.slow
def test_a_candidate_stored_with_limit_is_exit_4_naming_the_limit(setup: dict, tmp_path: Path) -> None:
    lim = served_config(tmp_path / "lim.yaml", "limited", setup["lossy"], [NEEDLES, DOCS])
    runs = tmp_path / "runs"
    res = run_cli("run", str(lim), "--out", str(runs), "--limit", "1")
    assert res.returncode == 0 and "--limit 1: only the first 1 item(s) of each pack" in _flat(res), _flat(res)
    [cand_dir] = runs.iterdir()
    assert json.loads((cand_dir / "manifest.json").read_text())["limit"] == 1
    rep = run_cli("report", str(setup["base_dir"]), str(cand_dir))
    assert rep.returncode == 4, _flat(rep)
    text = _flat(rep)
    assert "doc_fields: 1 item(s) asked by both runs, 5 by the baseline alone" in text
    assert f"limited {cand_dir} was stored with --limit 1" in text and "it lacks 5" in text
    assert run_cli("report", str(setup["base_dir"]), str(cand_dir), "--subset").returncode == 0


@pytest.mark.slow
def test_baseline_errors_are_exit_4_with_their_count_and_first_message(setup: dict, tmp_path: Path) -> None:
    """The baseline raised on 10 of 12 items; the candidate is wrong on exactly those 10."""
    items = setup["items"]
    firsts = {next(it.id for it in items if it.pack == p) for p in ("needle_numbers", "doc_fields")}
    victims = {it.id for it in items if it.id not in firsts}
    base_dir = tmp_path / "runs" / "base-oom"
    shutil.copytree(setup["base_dir"], base_dir)
    lines = [json.loads(line) for line in (base_dir / "samples.jsonl").read_text().splitlines()]
    with (base_dir / "samples.jsonl").open("w") as f:
        for g in lines:
            if g["item_id"] in victims:
                g = Generation(item_id=g["item_id"], pack=g["pack"], prompt_hash=g["prompt_hash"],
                               error=OOM).model_dump(mode="json")
            f.write(json.dumps(g) + "\n")
    with OpenAITestServer(ExactBackend(gold_answers(items, wrong=lambda it: it.id in victims))) as srv:
        cand = served_config(tmp_path / "cand.yaml", "cand", srv.base_url, [NEEDLES, DOCS])
        assert run_cli("run", str(cand), "--out", str(tmp_path / "runs")).returncode == 0
    [cand_dir] = [d for d in (tmp_path / "runs").iterdir() if d.name.startswith("cand-")]
    res = run_cli("report", str(base_dir), str(cand_dir))
    assert res.returncode == 4, _flat(res)
    text = _flat(res)
    for pack in ("needle_numbers", "doc_fields"):
        assert f"{pack}: 1 of 6 items paired: baseline {base_dir} raised on 5" in text
    assert OOM in text


@pytest.mark.slow
def test_a_pack_without_a_rule_is_exit_4(setup: dict, tmp_path: Path) -> None:
    """The gate disables every rule that applies to doc_fields, where the candidate loses 5 of 6."""
    gate = {"packs": {"*": {"max_drop": 0}, "doc_fields": {"max_drop": None}},
            "max_harmful_flips": {"amount": None, "date": None}}
    norule = served_config(tmp_path / "norule.yaml", "norule", setup["lossy"], [NEEDLES, DOCS], gate=gate)
    res = run_cli("compare", str(setup["base"]), str(norule), "--out", str(setup["root"] / "runs"))
    assert res.returncode == 4, _flat(res)
    assert f"doc_fields {NO_RULE}" in _flat(res) and "verdict: INCOMPLETE" in res.stdout
