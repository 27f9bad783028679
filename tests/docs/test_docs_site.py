"""The manual builds and the README stays its front page.

`mkdocs build --strict` fails on a broken link or anchor, a page missing from the nav, a nav
entry without its page, and an API reference that cannot be read from the docstrings, so
running it here makes `make test` catch all of them. The README is checked for what it
promises: at most 300 lines, the Quickstart's two commands first, links that resolve."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from markdown.extensions.toc import slugify

import evalrun
from tests.conftest import ROOT

DOCS = ROOT / "docs"
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
MAX_README_LINES = 300


def _nav_pages(entries: list) -> list[str]:
    pages: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def _headings(page: Path) -> set[str]:
    """The anchors mkdocs gives a page's headings (Python-Markdown's toc slugs)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {slugify(re.sub(r"[`*]", "", h).strip(), "-") for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_the_manual_builds_in_strict_mode(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                          str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
                         timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    api = (tmp_path / "site" / "python-api" / "index.html").read_text(encoding="utf-8")
    assert 'id="evalrun.compare"' in api and 'id="evalrun.fields_df"' in api  # rendered from docstrings


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages
    assert "field-types.md" in nav  # the generated field type reference (python -m evalrun.values.docs)


def test_the_api_reference_covers_every_public_name() -> None:
    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: evalrun\.(\w+)$", page, re.M))
    assert documented == set(evalrun.__all__) - {"__version__"}


def test_the_readme_is_short_and_starts_with_the_two_quickstart_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_README_LINES
    quickstart = text.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    commands = [line.strip() for block in re.findall(r"```\w*\n(.*?)```", quickstart, re.S)
                for line in block.splitlines() if line.strip()]
    assert commands[:2] == ["make demo", "make test"]


def test_the_readmes_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else README
        assert target.exists(), f"README links to {link}, which does not exist"
        if anchor:
            assert anchor in _headings(target), f"README links to {link}: no such heading"


def test_every_measured_result_says_when_where_and_how() -> None:
    """benchmarks/RESULTS.md: each entry with figures names its date, versions, machine and command."""
    entries = re.split(r"^## ", RESULTS.read_text(encoding="utf-8"), flags=re.M)[1:]
    assert len(entries) >= 10
    for entry in entries:
        title = entry.splitlines()[0]
        if "No figures recorded" in entry:
            continue
        for key in ("Date", "Versions", "Machine", "Command"):
            assert re.search(rf"^- {key}", entry, re.M | re.I), f"RESULTS.md '{title}': no {key} line"


def test_config_examples_are_the_files_they_name() -> None:
    """A YAML example headed by the bare path of a config (`# configs/int4kv.yaml`) is that file:
    the same keys and values (comments may differ), so a changed config cannot leave its
    documentation behind. Examples marked "shortened" are left out by their heading."""
    checked = 0
    for page in [README, *sorted(DOCS.rglob("*.md"))]:
        for path, body in re.findall(r"```yaml\n# ((?:configs|examples)/[\w./-]+\.yaml)\n(.*?)```",
                                     page.read_text(encoding="utf-8"), re.S):
            shown = yaml.safe_load(body)
            assert shown == yaml.safe_load((ROOT / path).read_text(encoding="utf-8")), f"{page.name}: {path}"
            checked += 1
    assert checked >= 3


# a path into the repository: one of its top-level folders, then a file or folder name (the stages'
# old top-level names stay in the pattern, so a path written the pre-src way fails as a missing file)
_REPO_PATH = re.compile(r"(?<![\w./<>-])((?:src|contract|values|tasks|runners|evals|reports|evalrun|configs"
                        r"|benchmarks|examples|tests|docs)/[\w./*-]*)")


def test_every_repository_path_the_manual_names_exists() -> None:
    """Files named in the README, the manual and the results (`src/evalrun/evals/gate/_gate.py`, `python
    benchmarks/kv_backends.py`, `configs/int4kv.yaml`) exist, so a moved module or a renamed
    config cannot leave the documentation pointing at nothing."""
    named = 0
    for page in [README, RESULTS, *sorted(DOCS.rglob("*.md"))]:
        for path in _REPO_PATH.findall(page.read_text(encoding="utf-8")):
            path = path.rstrip(".")
            found = list(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()
            assert found, f"{page.relative_to(ROOT)} names {path}, which does not exist"
            named += 1
    assert named > 100
