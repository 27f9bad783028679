"""The collapse canary end to end (docs/gate.md, 'Collapse canary'), on deterministic OpenAI-compatible servers
(tests/fakes/openai_server.py ExactBackend): a baseline answering every field right, and candidates answering
"????", nothing, or the baseline's own answers. The gate tolerates 25 harmful flips per field type and a 60-point
drop, so the flip rules alone decide only at the 52nd of 60 items (all 52 were generated before the canary);
`collapse` stops the candidate within its first few answers and names them in every report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from evalrun.evals.compare import length_bucket
from evalrun.evals.run._early_stop import EarlyStop
from evalrun.evals.store import RunStore
from tests.conftest import run_cli
from tests.fakes.openai_server import ExactBackend, OpenAITestServer, gold_answers, items_of, served_config

# 60 items, 30 of them amounts: max_harmful_flips[amount] is decided at the 26th amount flip, the 52nd item
NEEDLES = {"pack": "needle_numbers", "lengths": [256, 384, 512, 640, 768, 896], "depths": [0.0, 0.25, 0.5, 0.75, 1.0],
           "values": ["integer", "amount"]}
DOCS = {"pack": "doc_fields", "documents": 4, "lengths": [600], "fields": ["total", "due_date"]}
TOLERANT = {"packs": {"*": {"max_drop": 60}},
            "max_harmful_flips": {k: 25 for k in ("amount", "number", "date", "id", "text", "enum")}}


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    items = items_of([NEEDLES])
    assert len(items) == 60
    with OpenAITestServer(ExactBackend(gold_answers(items))) as exact, \
            OpenAITestServer(ExactBackend(lambda _p: "????")) as marks, \
            OpenAITestServer(ExactBackend(lambda _p: "<<<<////")) as tags, \
            OpenAITestServer(ExactBackend(lambda _p: "")) as empty:
        yield {"exact": exact.base_url, "marks": marks.base_url, "tags": tags.base_url, "empty": empty.base_url}


def _compare(tmp: Path, urls: dict[str, str], cand: str, *extra: str) -> tuple[Any, dict[str, Any], Path]:
    out = tmp / "runs"
    tmp.mkdir(exist_ok=True)
    base = served_config(tmp / "base.yaml", "base", urls["exact"], [NEEDLES])
    config = served_config(tmp / f"{cand}.yaml", cand, urls[cand if cand in urls else "exact"], [NEEDLES],
                           gate=TOLERANT)
    res = run_cli("compare", str(base), str(config), "--out", str(out), "--json", str(tmp / "v.json"), *extra)
    data = json.loads((tmp / "v.json").read_text()) if (tmp / "v.json").exists() else {}
    return res, data, next(out.glob(f"{cand}-*"))


def _rule(data: dict[str, Any], name: str = "collapse") -> dict[str, Any]:
    return next(r for r in data["verdicts"][0]["rules"] if r["rule"] == name)


def test_a_candidate_answering_marks_stops_within_ten_items_on_collapse(urls: dict[str, str], tmp_path: Path) -> None:
    res, data, run = _compare(tmp_path, urls, "marks")
    assert res.returncode == 1, res.stdout + res.stderr
    stored = len(RunStore(run).read_samples())
    assert stored <= 10, stored
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "stopped" and "*: collapse" in manifest["early_stop"]["rules"]
    rule = _rule(data)
    assert rule["status"] == "fail" and rule["pack"] == "*" and "'????'" in rule["detail"]
    assert f"candidate repeat {stored}" in rule["detail"] and "baseline none" in rule["detail"]
    assert "collapse" in " ".join(res.stdout.split())


def test_the_canary_comes_first_one_item_per_pack_length_bucket_and_depth() -> None:
    items = items_of([NEEDLES, DOCS])
    first, rest = EarlyStop.canary(items)
    cells = {(it.pack, it.meta.target_tokens and length_bucket(it.meta.target_tokens),
              round(4 * (it.meta.depth if it.meta.depth is not None else it.meta.field_depth or 0))) for it in items}
    assert len(first) == len(cells) < len(items) and {it.pack for it in first} == {"needle_numbers", "doc_fields"}
    assert [it.id for it in first + rest] != [it.id for it in items] and sorted(first + rest, key=items.index) == items
    assert first == sorted(first, key=items.index) and rest == sorted(rest, key=items.index)  # plan order in each


def test_empty_answers_collapse_and_the_a_a_candidate_does_not(urls: dict[str, str], tmp_path: Path) -> None:
    res, data, run = _compare(tmp_path / "e", urls, "empty")
    assert res.returncode == 1 and _rule(data)["status"] == "fail", res.stdout + res.stderr
    assert len(RunStore(run).read_samples()) <= 10 and "candidate empty" in _rule(data)["detail"]
    same, data, run = _compare(tmp_path / "a", urls, "same")
    assert same.returncode == 0, same.stdout + same.stderr
    assert len(RunStore(run).read_samples()) == 60
    assert all(r["rule"] != "collapse" for r in data["verdicts"][0]["rules"])  # no degenerate answer: nothing to say


def test_the_full_run_and_report_decide_collapse_and_show_the_answers_escaped(urls: dict[str, str],
                                                                              tmp_path: Path) -> None:
    res, data, run = _compare(tmp_path, urls, "tags", "--no-early-stop", "--html", str(tmp_path / "r.html"),
                              "--markdown", str(tmp_path / "r.md"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert len(RunStore(run).read_samples()) == 60 and _rule(data)["status"] == "fail"
    assert "candidate repeat 60" in _rule(data)["detail"]
    html = (tmp_path / "r.html").read_text()
    assert "&#39;&lt;&lt;&lt;&lt;////&#39;" in html and "'<<<<////'" not in html
    assert "collapse" in (tmp_path / "r.md").read_text() and "&lt;&lt;&lt;&lt;////" in (tmp_path / "r.md").read_text()
    again = run_cli("report", str(next((tmp_path / "runs").glob("base-*"))), str(run), "--json",
                    str(tmp_path / "again.json"))
    assert again.returncode == 1, again.stdout + again.stderr
    assert _rule(json.loads((tmp_path / "again.json").read_text()))["status"] == "fail"
