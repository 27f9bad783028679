"""The HTML report in a real browser: Debian's chromium driven by Playwright.

Checks what a reviewer relies on: the verdict is on the page, the "flipped
only" switch changes the rows, hostile model text and gold values stay text
(nothing runs), the page requests nothing but itself, and without JavaScript
the verdict, tables, heatmaps and harmful flips are still there. Reports are
built from synthetic runs (tests/conftest.py): no model.

A screenshot of the report is kept in test-artifacts/ (gitignored).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from html import unescape
from pathlib import Path

import pytest

from evalrun.reports.view import build_view as build_report_data
from evalrun.reports.formats.html import json_for_script, render_html
from tests.conftest import ROOT, run_cli
from tests.conftest import HOSTILE_GOLD, HOSTILE_OUTPUT, make_report, write_runs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def report_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_html(build_report_data(make_report()), tmp_path_factory.mktemp("html") / "report.html")


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium not found (install Debian's: apt-get install -y chromium; `make test` tries to)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _open(browser, path: Path, javascript: bool = True):  # type: ignore[no-untyped-def]
    context = browser.new_context(java_script_enabled=javascript, viewport={"width": 1400, "height": 900})
    page = context.new_page()
    state = {"requests": [], "errors": [], "dialogs": []}
    page.on("request", lambda r: state["requests"].append(r.url))
    page.on("pageerror", lambda e: state["errors"].append(str(e)))
    page.on("dialog", lambda d: (state["dialogs"].append(d.message), d.dismiss()))
    page.goto(path.as_uri())
    if javascript:
        page.wait_for_selector("#browser-ready", state="attached", timeout=10_000)
    return page, state


def _visible_rows(page) -> int:  # type: ignore[no-untyped-def]
    return page.locator("#item-rows > tr:not(.detail)").count()


# --------------------------------------------------------------------------- without a browser


def test_file_is_self_contained_and_escaped(report_path: Path) -> None:
    html = report_path.read_text(encoding="utf-8")
    [csp] = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    csp = unescape(csp)
    assert csp.startswith("default-src 'none';") and "script-src 'sha256-" in csp and "img-src data:" in csp
    assert "unsafe-eval" not in csp and "script-src 'unsafe-inline'" not in csp
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "no remote resource"
    assert "@import" not in html and "url(" not in html
    # the hostile strings never appear as markup, only escaped (tables) or \u003c-escaped (row data)
    assert HOSTILE_OUTPUT not in html and HOSTILE_GOLD not in html and "<img" not in html
    assert html.count("<script") == 3 and html.count("</textarea>") == 0
    assert json_for_script({"a": "</script><!--"}) == '{"a":"\\u003c/script\\u003e\\u003c!--"}'


# --------------------------------------------------------------------------- in chromium


@pytest.mark.slow
def test_verdict_filters_and_no_network(browser, report_path: Path) -> None:  # type: ignore[no-untyped-def]
    page, state = _open(browser, report_path)
    assert page.locator("#verdict-text").inner_text() == "verdict: FAIL"
    assert "max_harmful_flips[number]" in page.locator("#verdict").inner_text()
    assert page.locator("#heatmaps svg").count() == 6  # needle: baseline, candidate, difference per candidate
    assert page.locator("#heatmaps svg title").count() > 0
    # flipped only is on by default: 7 flipped fields for int4kv, none for sparse
    assert page.is_checked("#f-flipped")
    flipped = _visible_rows(page)
    assert flipped == 7
    page.uncheck("#f-flipped")
    assert _visible_rows(page) == 30  # 15 fields x 2 candidates, one page
    page.select_option("#f-cand", label="int4kv")
    page.check("#f-flipped")
    page.select_option("#f-outcome", label="wrong_value")
    assert _visible_rows(page) == 6
    # the dropped digit is marked in the candidate's value
    row = page.locator("#item-rows tr", has_text="docs/INV1/total")
    assert row.locator("mark.d-del").inner_text() == "1"  # on the gold side: the 1 that was lost
    assert "dropped here: 1" == row.locator(".d-gap").get_attribute("title")
    # expanding shows the document with the source sentence highlighted and both outputs
    row.locator("button").click()
    page.wait_for_selector("tr.detail .outputs")
    detail = page.locator("tr.detail")
    assert detail.locator("mark.hl.this").first.inner_text() == "The total amount due is EUR 14,851.20."
    assert "The total is EUR 1,485.20." in detail.inner_text()
    assert state["errors"] == []
    assert state["requests"] == [report_path.as_uri()], "the page must request nothing but itself"
    # the CSP runs only the page's own script: an injected inline script does nothing
    assert page.evaluate("""() => { const s = document.createElement('script');
        s.textContent = 'window.injected = 1'; document.body.appendChild(s); return window.injected; }""") is None
    page.context.close()


def test_hostile_output_and_gold_stay_text(browser, report_path: Path) -> None:  # type: ignore[no-untyped-def]
    page, state = _open(browser, report_path)
    page.select_option("#f-field", label="supplier (text)")
    row = page.locator("#item-rows tr", has_text="docs/INV1/supplier").first
    row.locator("button").click()
    page.wait_for_selector("tr.detail .outputs")
    text = page.locator("#items").inner_text()
    assert HOSTILE_OUTPUT in text, "the raw output is shown as text"
    assert "gold as written: " + HOSTILE_GOLD in text
    assert page.locator("#items img, #items script, #items textarea").count() == 0
    assert page.evaluate("window.pwned") is None
    assert page.title().startswith("evalrun") and "pwned" not in page.title()
    assert state["dialogs"] == [] and state["errors"] == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(report_path.as_uri())
    page.wait_for_selector("#browser-ready", state="attached")
    page.screenshot(path=str(ARTIFACTS / "html-report.png"), full_page=True)
    page.context.close()


def test_readable_without_javascript(browser, report_path: Path) -> None:  # type: ignore[no-untyped-def]
    page, state = _open(browser, report_path, javascript=False)
    assert page.locator("#verdict-text").inner_text() == "verdict: FAIL"
    assert page.locator("#heatmaps svg").count() == 6
    assert page.locator("table").first.is_visible()
    assert not page.locator("#browser").is_visible()
    flips = page.locator("table.flips").first
    assert flips.is_visible() and "docs/INV1/total" in flips.inner_text()
    assert flips.locator("mark.d-del").first.inner_text() == "1"
    assert page.locator("img, textarea").count() == 0
    assert state["requests"] == [report_path.as_uri()]
    page.context.close()


def test_speed_table_escaped_and_claims_shown(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Text that reaches the speed table from a config or a method's effects stays text."""
    report = make_report()
    hostile = "<img src=x onerror=\"window.pwned=true\">"
    cand = report.candidates[0].run
    cand.manifest.config.acceleration["kv_cache"]["quant"] = hostile
    cand.manifest.effects["kv_cache"].kv_bytes_ratio = None
    # a value the method shows in its headline (kv_cache: kv_bytes_ratio, max_cached_tokens)
    cand.manifest.effects["kv_cache"].max_cached_tokens = "<script>window.pwned=true</script>"
    path = render_html(build_report_data(report), tmp_path / "speed.html")
    html = path.read_text(encoding="utf-8")
    assert hostile not in html and "<script>window.pwned" not in html
    page, state = _open(browser, path)
    speed = page.locator("#speed").inner_text()
    assert hostile in speed and "<script>window.pwned=true</script>" in speed, "shown as text"
    assert "2.00× [2.00, 2.00]" in speed  # TTFT and decode speedups with their interval
    assert "activation_sparsity: emulated — no speed claim" in speed
    assert "prefill included" in speed and "Speed by pack, latency shape and context length" in speed
    assert "Definitions (vLLM bench serve)" in speed and "TPOT p50 / p99" in speed
    assert page.locator("#speed img, #speed script").count() == 0
    assert page.evaluate("window.pwned") is None and state["errors"] == [] and state["dialogs"] == []
    page.context.close()


@pytest.mark.slow
def test_report_command_rerenders_stored_runs(tmp_path: Path) -> None:
    dirs = write_runs(tmp_path / "runs", make_report())
    out = tmp_path / "out" / "r.html"
    res = run_cli("report", *map(str, dirs), "--html", str(out), timeout=120)
    assert res.returncode == 1, res.stderr  # int4kv regressed
    assert "verdict: FAIL" in res.stdout and str(out) in res.stdout.replace("\n", "")
    assert "Speed vs accuracy" in res.stdout and "emulated — no speed claim" in res.stdout
    cap = run_cli("report", *map(str, dirs), "--html", str(out), "--requests-per-day", "1000000",
                  "--peak-factor", "3", "--slo", "ttft=1s", "--percentiles", "50,99", timeout=120)
    flat = cap.stdout.replace("\n", " ")
    assert "1,000,000 requests/day at peak factor 3" in flat and "prefill included" in flat
    assert "ttft<=1000ms" in flat and "Percentiles: p50, p99" in flat
    for option, value in (("--slo", "ttft=soon"), ("--percentiles", "50,150")):
        bad = run_cli("report", *map(str, dirs), option, value, timeout=120)
        assert bad.returncode == 2 and option in bad.stderr
    html = out.read_text(encoding="utf-8")
    assert "verdict: FAIL" in html and "int4kv" in html
    ok = run_cli("report", str(dirs[0]), str(dirs[2]), "--html", str(out), timeout=120)
    assert ok.returncode == 0, ok.stderr
    bad = run_cli("report", str(dirs[0]), "--html", str(out), timeout=120)
    assert bad.returncode == 2 and "at least one candidate" in bad.stderr
    assert "--html" in run_cli("compare", "--help", timeout=120).stdout


def test_replicates_noise_and_power_in_the_page(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The page states the baseline's replicates, lists each flip the gate did not count and why,
    and each pack's power (runs built by hand: this checks rendering, not noise)."""
    from evalrun.evals.api import compare_results
    from evalrun.evals.gate import GateConfig, evaluate
    from tests.conftest import BASE_WRONG, CAND_WRONG, doc_items, make_run, needle_items

    items = needle_items() + doc_items()
    base = make_run("baseline", items, BASE_WRONG)
    rep = make_run("baseline~r1", items, BASE_WRONG | {(512, 0.5, 0)})
    cand = make_run("int4kv", items, CAND_WRONG | {(512, 0.5, 0), "docs"}, hostile=True)
    report = compare_results(base, [(cand, None)], replicates=[rep])
    comp = report.comparisons[0]
    total = next(f for f in comp.harmful if f.item_id == "docs/INV1/total")
    total.confirmations = (0, 3)  # a re-ask result, as evals.run.confirm.apply records one
    redone = replace(report.candidates[0], verdict=evaluate(comp, GateConfig(), stab=report.stability))
    report = replace(report, candidates=(redone,))
    path = render_html(build_report_data(report), tmp_path / "noise.html")
    page, state = _open(browser, path, javascript=False)
    assert "2 baseline replicates" in page.locator("#stability").inner_text()
    noise = page.locator("table.noise").inner_text()
    assert "needle/L512-D0.50-0" in noise and "noise: unstable at baseline, not gated" in noise
    assert "docs/INV1/total" in noise and "noise: reproduced in 0 of 3 re-asks, not counted" in noise
    verdict = page.locator("#verdict").inner_text()
    assert "harmful flip rate of" in verdict and "with 95% probability" in verdict
    assert "one-sided Fisher" in verdict
    flips = page.locator("#items table.flips").first.inner_text()
    assert "noise: reproduced in 0 of 3" in flips and "counted" in flips
    assert state["errors"] == [] and state["dialogs"] == []
    page.context.close()


def test_speed_pictures_are_inline_svg_labelled_and_escaped(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The scatter (a point per candidate and pack, the gate's region shaded) and the TTFT/TPOT
    distributions with p50/p95/p99 marked: drawn by evalrun, readable without JavaScript, no
    run name able to become markup."""
    from evalrun.evals.gate import load_gate

    from evalrun.evals.api import compare_results as api_compare_results
    from tests.conftest import doc_items, make_run, needle_items

    items = needle_items() + doc_items()
    base = make_run("baseline", items, set(), seconds=0.8, batch=4, new_tokens=10)
    hostile = '<script>window.pwned=1</script>"x'
    cand = make_run(hostile, items, set(), seconds=0.4, batch=4, new_tokens=10)
    gate = load_gate({"speed": [{"min_speedup": {"metric": "e2el_p50", "value": 1.5}}]})
    report = api_compare_results(base, [(cand, gate)])
    path = render_html(build_report_data(report), tmp_path / "pictures.html")
    html = path.read_text(encoding="utf-8")
    assert "<script>window.pwned" not in html
    for javascript in (False, True):
        page, state = _open(browser, path, javascript=javascript)
        svgs = page.locator("#speed figure.chart svg")
        assert svgs.count() == 3  # scatter, TTFT, TPOT
        titles = [svgs.nth(i).locator("title").first.text_content() for i in range(3)]
        assert "Speed against accuracy" in titles[0] and "TTFT" in titles[1] and "TPOT" in titles[2]
        scatter = svgs.nth(0)
        assert scatter.locator(".ch-point").count() == 2  # one per pack (needle, docs)
        assert scatter.locator(".ch-gate").count() == 1 and "gate passes here" in scatter.inner_html()
        assert f"{hostile} · needle" in scatter.text_content()  # shown as text
        assert "p99" in svgs.nth(1).text_content() and "ms" in svgs.nth(1).text_content()
        assert page.locator("#speed svg script").count() == 0 and page.evaluate("window.pwned") is None
        assert state["errors"] == [] and all(r.startswith("file:") for r in state["requests"])
        page.context.close()


def test_kl_strip_opens_with_the_item_and_stays_text(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Opening a flipped item draws its per-token KL strip from the stored texts: the baseline's tokens as
    text (a `<script>` token runs nothing), shaded, the other top-1 and first divergent token marked,
    the flip note beside; the KL heatmap sits beside the accuracy heatmaps."""
    from tests.reports.test_drift_views import FLIPPED, HOSTILE_TOKEN, drift_report

    path = render_html(build_report_data(drift_report()), tmp_path / "drift.html")
    page, state = _open(browser, path)
    assert page.locator("#heatmaps figure.kl svg").count() == 1  # int4kv's needle pack; sparse has no drift
    assert "int4kv: mean KL per token" in page.locator("#heatmaps").inner_text()
    page.select_option("#f-cand", label="int4kv")
    row = page.locator("#item-rows tr", has_text=FLIPPED).first
    row.locator("button").click()
    page.wait_for_selector("tr.detail .kl-strip")
    strip = page.locator("tr.detail .kl-strip")
    tokens = strip.locator("span.tok")
    assert tokens.count() == 4 and tokens.nth(2).inner_text() == HOSTILE_TOKEN
    assert "KL ≈ 1.0" in (tokens.nth(2).get_attribute("title") or "")
    assert strip.locator(".other-top1").count() == 1 and strip.locator(".first-diff").count() == 1
    assert tokens.nth(0).evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 247, 236)"  # KL 0
    assert "fragile: baseline 0.52 vs 0.47 at token 2" in page.locator("tr.detail .flip-note").inner_text()
    assert page.locator("#items script, #items img").count() == 0 and page.evaluate("window.pwned") is None
    assert state["errors"] == [] and state["dialogs"] == []
    page.context.close()
