"""Every command's --help shows its help texts as written: no bracketed text (`'evalrun[ray]'`, `[95% CI]`)
is taken for markup and dropped. Walks every command and group of the app, renders its --help, and
finds each bracketed span of each option's, argument's and command's source help in the output."""

from __future__ import annotations

import re
from typing import Any, Iterator

import typer

from evalrun.cli import app
from tests.conftest import run_cli

_BRACKETED = re.compile(r"\[[^\[\]\n]*\]")


def _flat(text: str) -> str:
    """Text as words: box drawing and line wrapping removed."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def _commands(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    """Every command under `cmd` (typer carries its own click: groups are known by their `commands`)."""
    yield path, cmd
    if isinstance(getattr(cmd, "commands", None), dict):
        for name, sub in cmd.commands.items():
            yield from _commands(sub, [*path, name])


def _sources(cmd: Any) -> list[str]:
    texts = [cmd.help or ""]
    texts += [p.help or "" for p in cmd.params if isinstance(getattr(p, "help", None), str)]
    return texts


def test_every_help_text_keeps_its_brackets() -> None:
    checked, lost = 0, []
    for path, cmd in _commands(typer.main.get_command(app), []):
        res = run_cli(*path, "--help")
        assert res.returncode == 0, (path, res.stderr)
        shown = _flat(res.stdout)
        for text in _sources(cmd):
            for span in _BRACKETED.findall(_flat(text)):
                checked += 1
                if span not in shown:
                    lost.append(f"evalrun {' '.join(path)} --help: {span!r} (from {text[:60]!r}...)")
    assert checked >= 2  # the walk found the bracketed texts (`evalrun[ray]` in run and compare)
    assert not lost, "\n".join(lost)


def test_run_help_names_the_ray_extra() -> None:
    assert "pip install 'evalrun[ray]'" in _flat(run_cli("run", "--help").stdout)
