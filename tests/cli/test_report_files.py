"""Report files always say this run's verdict or why there is none: one output
that fails (to render, to write, or a terminal that went away) never stops the
others, and a run that fails never leaves an earlier run's verdict behind."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from evalrun.cli_outputs import Outputs
from evalrun.evals.files import ConfigError
from evalrun.evals.run import RunFailed
from evalrun.evals.speed import speed_table
from tests.conftest import ROOT, make_report, run_cli, write_runs
from tests.reports.test_safe_output import RAW, hostile_report


def _outputs(tmp: Path) -> list[str]:
    return ["--html", str(tmp / "r.html"), "--junit", str(tmp / "j.xml"), "--markdown", str(tmp / "s.md"),
            "--json", str(tmp / "r.json")]


def _no_verdict(tmp: Path, exit_code: int | None, reason: str) -> None:
    """Every file says there is no verdict, in its own format, and why."""
    data = json.loads((tmp / "r.json").read_text(encoding="utf-8"))
    assert data["passed"] is False and data["exit_code"] == exit_code and reason in data["error"]
    root = ET.parse(tmp / "j.xml").getroot()
    assert root.get("errors") == "1" and root.get("failures") == "0"
    assert reason in root.find("testsuite/testcase/error").get("message")
    md = (tmp / "s.md").read_text(encoding="utf-8")
    assert md.startswith("## evalrun: ❌ NO VERDICT") and "PASS" not in md and reason in md
    page = (tmp / "r.html").read_text(encoding="utf-8")
    assert "<title>evalrun: NO VERDICT" in page and "PASS" not in page


@pytest.mark.slow
def test_a_lone_surrogate_with_html_still_writes_every_report(tmp_path: Path) -> None:
    dirs = write_runs(tmp_path / "runs", hostile_report("x\ud800\x1b[2J\u202ey", ("base", "cand")))
    res = run_cli("report", *map(str, dirs), *_outputs(tmp_path), timeout=300)
    assert res.returncode == 1, res.stderr  # the verdict (a regression), not a runtime failure
    for name in ("r.html", "j.xml", "s.md", "r.json"):
        assert not RAW.search((tmp_path / name).read_text(encoding="utf-8")), name
    ET.parse(tmp_path / "j.xml")
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == 1
    assert "\x1b" not in res.stdout + res.stderr and "verdict: FAIL" in res.stdout


@pytest.mark.slow
def test_a_failed_run_leaves_no_earlier_verdict(tmp_path: Path, smol_dir: str) -> None:
    dirs = write_runs(tmp_path / "runs", make_report())
    ok = run_cli("report", str(dirs[0]), str(dirs[2]), *_outputs(tmp_path), timeout=300)
    assert ok.returncode == 0 and json.loads((tmp_path / "r.json").read_text())["passed"] is True
    dead = {"name": "served", "runner": "openai", "model": "smollm2-135m", "generation": {"max_new_tokens": 8},
            "openai": {"base_url": "http://127.0.0.1:9/v1", "max_retries": 0, "backoff": 0.05},
            "tasks": [{"pack": "needle_numbers", "lengths": [96], "depths": [0.0], "values": ["integer"]}]}
    cfg = tmp_path / "dead.yaml"
    cfg.write_text(yaml.safe_dump(dead))
    res = run_cli("compare", str(cfg), str(cfg), "--out", str(tmp_path / "runs2"), *_outputs(tmp_path),
                  timeout=300)
    assert res.returncode == 3, res.stderr
    assert "GET /models still failing" in res.stderr
    _no_verdict(tmp_path, 3, "GET /models still failing")


def test_claimed_paths_say_running_until_the_verdict_replaces_it(tmp_path: Path) -> None:
    for name in ("r.html", "j.xml", "s.md", "r.json"):
        (tmp_path / name).write_text("PASS from an earlier run")
    outputs = Outputs(html=tmp_path / "r.html", junit=tmp_path / "j.xml", markdown=tmp_path / "s.md",
                      json=tmp_path / "r.json")
    outputs.claim()  # what a killed run leaves
    _no_verdict(tmp_path, None, "has not written its verdict here")
    report = make_report()
    assert outputs.write(report, speed_table(report), 1.0, lambda _: None) == []
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == report.exit_code
    assert outputs.fail("too late", 3) == []  # written with this run's verdict: nothing left to replace
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == report.exit_code


@pytest.mark.parametrize(("exc", "code", "reason"), [
    (RunFailed("tiny: every item failed; first error: \x1b[2Jboom"), 3,
     "every item failed; first error: \u241b[2Jboom"),
    (KeyboardInterrupt(), 130, "interrupted"),
    (ValueError("bad \ud800 value"), 3, "internal error: ValueError: bad \ufffd value"),
])
def test_a_command_that_raises_after_the_claim_says_why(tmp_path: Path, exc: BaseException, code: int,
                                                         reason: str) -> None:
    outputs = Outputs(html=tmp_path / "r.html", junit=tmp_path / "j.xml", markdown=tmp_path / "s.md",
                      json=tmp_path / "r.json")

    def go() -> int:
        outputs.claim()
        raise exc

    with pytest.raises(type(exc)):
        outputs.guarded(go)()
    _no_verdict(tmp_path, code, reason)


def test_a_usage_error_after_the_claim_leaves_no_report(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text('{"passed": true}')  # an earlier PASS
    outputs = Outputs(junit=tmp_path / "j.xml", json=tmp_path / "r.json")

    def go() -> int:
        outputs.claim()
        raise ConfigError("unknown pack 'needle_numbrs'", path="packs")

    with pytest.raises(ConfigError):
        outputs.guarded(go)()
    assert list(tmp_path.iterdir()) == []


def test_one_output_failing_to_render_costs_that_file_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalrun.reports.formats import html

    def broken(*_: object) -> str:
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")

    def terminal(_: object) -> None:
        raise BrokenPipeError("stdout went away")

    monkeypatch.setattr(html, "render_html_text", broken)
    outputs = Outputs(html=tmp_path / "r.html", junit=tmp_path / "j.xml", markdown=tmp_path / "s.md",
                      json=tmp_path / "r.json")
    outputs.claim()
    report = make_report()
    failures = outputs.write(report, speed_table(report), 1.0, lambda _: None, terminal=terminal)
    assert failures[0].startswith("<stdout>: terminal report not printed: BrokenPipeError")
    assert failures[1].startswith(f"{tmp_path / 'r.html'}: HTML report not written: UnicodeEncodeError")
    assert len(failures) == 2
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == report.exit_code
    assert ET.parse(tmp_path / "j.xml").getroot().find("testsuite") is not None
    assert (tmp_path / "s.md").read_text().startswith("## evalrun: ❌ FAIL")
    page = (tmp_path / "r.html").read_text()
    assert "<title>evalrun: NO VERDICT (the run failed, exit 3)" in page and "surrogates not allowed" in page


@pytest.mark.slow
def test_a_closed_stdout_still_writes_the_reports_and_exits_with_the_verdict(tmp_path: Path) -> None:
    dirs = write_runs(tmp_path / "runs", make_report())
    proc = subprocess.Popen([sys.executable, "-m", "evalrun.cli", "report", str(dirs[0]), str(dirs[2]),
                             "--junit", str(tmp_path / "j.xml")], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.close()  # `evalrun report ... | head -0`: the reader is gone before the first line
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert ET.parse(tmp_path / "j.xml").getroot().get("failures") == "0"


def test_progress_shows_a_hostile_run_name_safely() -> None:
    import io

    from evalrun.cli_app import _PlainProgress, _RichProgress

    stream = io.StringIO()
    plain = _PlainProgress(interval=60, stream=stream)
    plain.start("cand\x1b]0;pwned\x07\u202e", 2, 0)
    plain.finish()
    assert not RAW.search(stream.getvalue()) and "cand\u241b]0;pwned\u2407\ufffd" in stream.getvalue()
    bar = _RichProgress()
    bar.start("cand\x1b[2J\ud800", 2, 0)
    assert bar._progress is not None
    description = bar._progress.tasks[0].description
    bar.finish()
    assert not RAW.search(description)
