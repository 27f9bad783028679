"""Text that acts instead of showing never leaves evalrun raw: ESC and other C0
controls, C1 controls, bidi overrides and lone surrogates in item ids, golds,
answers, field, pack and run names and error messages are made visible in the
terminal, Markdown, JUnit XML, HTML and JSON; each output still says the verdict,
and a value cannot break a Markdown table or the XML."""

from __future__ import annotations

import base64
import gzip
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Iterator

import pytest

from evalrun.contract import Field, Item
from evalrun.evals import api
from evalrun.evals.results import RunResult
from evalrun.evals.speed import speed_table
from tests.fakes.runs import answered, run_result
from tests.reports.test_html_report import browser  # noqa: F401  (the headless Chromium fixture)

# what must never come out (written here on its own, not imported from the code under test)
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
HOSTILE = {
    "esc": "\x1b[31mRED\x1b[0m\x1b]0;pwned\x07",
    "c0": "a\x01b\x08c\rd\x00e",
    "c1": "f\x85g\x9b31mh",
    "bidi": "abc\u202eexe.txt\u2066x\u2069\u200fy",
    "surrogate": "s\ud800t\udfffu",
}
# table and markup syntax beside the controls: a value must not break a Markdown table either
SYNTAX = "|x\n| <b>y</b>"


def hostile_report(chars: str, names: tuple[str, str] | None = None) -> "api.CompareReport":
    """A baseline and a candidate named with `chars` (or `names`, for runs stored in folders), whose ids,
    pack, field, golds, answers and one error carry `chars`; the candidate is wrong on two items, errs on
    one and misses one (a gap naming its id)."""
    items = [Item(id=f"docs/{chars}/{i}", pack=f"docs{chars}", prompt=f"Who supplied invoice {i}?",
                  fields=[Field(name=f"supplier{chars}", kind="text", gold=f"ACME {chars} {i}")], meta={})
             for i in range(5)]

    def run(name: str, wrong: bool) -> RunResult:
        gens = {}
        for k, it in enumerate(items):
            if wrong and k == 4:
                continue
            out = f"Nobody {chars} {SYNTAX}" if wrong and k < 2 else f"The supplier is ACME {chars} {k}"
            gens[it.id] = answered(it, out,
                                     output_ids=[1, 2], new_tokens=2, seconds=0.1, batch_size=1, prompt_tokens=10,
                                     prefill_seconds=0.02, decode_seconds=0.08,
                                     error=f"CUDA {chars} out of memory" if wrong and k == 3 else None)
        return run_result(name, items, gens, Path("/runs") / name.encode("unicode_escape").decode("ascii"),
                          device="cpu", dtype="float32", load_seconds=1.0, speed={},
                          config={"model": f"model{chars}", "acceleration": {}}, emulated=[], effects={})

    base, cand = names or (f"base{chars}", f"cand{chars}")
    return api.compare_results(run(base, False), [(run(cand, True), None)])


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _raw_in(texts: Iterator[str]) -> list[str]:
    return [t for t in texts if RAW.search(t)]


def _terminal(report: "api.CompareReport", capsys: pytest.CaptureFixture[str]) -> str:
    from evalrun.cli_app import _console
    from evalrun.reports.formats import render_view
    from evalrun.reports.view import build_view

    render_view(_console(), build_view(report, speed=speed_table(report), html=False))
    _console(stderr=True).print(f"error: {report.verdicts[0].gaps[0].reason}")
    out = capsys.readouterr()
    return out.out + out.err


def _markdown(report: "api.CompareReport") -> str:
    from evalrun.reports.formats import render_markdown
    from evalrun.reports.view import build_view

    text = render_markdown(build_view(report, html=False))
    tables = re.findall(r"(?m)(?:^\|.*\n)+", text)
    assert len(tables) >= 2
    for table in tables:  # every row of a table has as many cells as its header
        lines = table.splitlines()
        assert {line.count("|") for line in lines} == {lines[0].count("|")}, table
    assert "<b>" not in text and "nobody" in text.lower()
    return text


def _junit(report: "api.CompareReport") -> str:
    from evalrun.reports.formats import junit_xml
    from evalrun.reports.view import build_view

    text = junit_xml(build_view(report, html=False))
    root = ET.fromstring(text)  # well-formed XML
    assert root.get("failures") != "0" or root.get("errors") != "0"
    return text


def _html(report: "api.CompareReport") -> list[str]:
    """The page as written, the item browser's rows and its texts, decoded as the page's script does."""
    from evalrun.reports.formats.html import render_html_text
    from evalrun.reports.view import build_view

    page = render_html_text(build_view(report))
    blob = re.search(r'<script type="text/plain" id="browser-texts">([A-Za-z0-9+/=]+)</script>', page)
    texts = json.loads(gzip.decompress(base64.b64decode(blob.group(1))))
    rows = json.loads(re.search(r'<script type="application/json" id="browser-data">(.*?)</script>', page).group(1))
    assert "Nobody" in json.dumps(texts, ensure_ascii=False)
    return [page, *_strings(texts), *_strings(rows)]


def _json(report: "api.CompareReport", tmp_path: Path) -> list[str]:
    from evalrun.cli_outputs import Outputs

    out = tmp_path / "r.json"
    assert Outputs(json=out).write(report, speed_table(report), 1.0, lambda _: None) == []
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["passed"] is False and data["exit_code"] == 1
    return list(_strings(data))


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("renderer", ["terminal", "markdown", "junit", "html", "json"])
def test_no_renderer_lets_a_hostile_character_through(renderer: str, kind: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    report = hostile_report(HOSTILE[kind])
    assert report.exit_code == 1
    texts = {"terminal": lambda: [_terminal(report, capsys)], "markdown": lambda: [_markdown(report)],
             "junit": lambda: [_junit(report)], "html": lambda: _html(report),
             "json": lambda: _json(report, tmp_path)}[renderer]()
    assert _raw_in(iter(texts)) == []
    joined = "".join(texts)
    assert "docs" in joined, "the values are shown, made safe, not dropped"
    assert "\ufffd" in joined or "\u241b" in joined or "\u2401" in joined, "a visible mark where the character was"


def test_the_neutraliser_keeps_offsets_lines_and_markup_out() -> None:
    from evalrun.reports.text import safe_text, safe_tree

    assert safe_text("a\x1b[31mb") == "a\u241b[31mb"
    assert safe_text("x\x01\x7f\x85\u202e\ud800y") == "x\u2401\u2421\ufffd\ufffd\ufffdy"
    assert safe_text("two\nlines\tand a tab") == "two\nlines\tand a tab"
    text = "".join(HOSTILE.values())
    assert len(safe_text(text)) == len(text), "one character for one: the browser's offsets stay right"
    assert not set(safe_text(text)) - set(text) - {"\u241b", "\u2407", "\u2401", "\u2408", "\u240d", "\u2400",
                                                   "\ufffd"}
    assert safe_tree({"k\x1b": ["v\ud800", 1.5, None]}) == {"k\u241b": ["v\ufffd", 1.5, None]}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_the_page_shows_visible_marks_in_a_browser(browser, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                   kind: str) -> None:
    """In headless Chromium: the item browser decodes its rows and texts and shows every opened
    output with the marks, never the characters, and the page's script runs without an error."""
    from evalrun.reports.formats.html import render_html
    from evalrun.reports.view import build_view
    from tests.reports.test_html_report import _open

    path = render_html(build_view(hostile_report(HOSTILE[kind])), tmp_path / "r.html")
    page, state = _open(browser, path)
    buttons = page.locator("#item-rows tr button")
    for i in range(buttons.count()):
        buttons.nth(i).click()
    page.wait_for_selector("tr.detail .outputs")
    text = page.evaluate("document.body.innerText") + page.title()
    assert "Nobody" in text and "CUDA" in text, "the opened outputs and the error are shown"
    assert not RAW.search(text)
    assert "\ufffd" in text or "\u241b" in text or "\u2401" in text
    assert state["errors"] == [] and state["dialogs"] == []
    page.context.close()
