"""Progress outside a terminal: plain lines at the start, on a timer even while no item
finishes, and at the end; in a terminal, the rich bar. Real time, no mocked clock."""

from __future__ import annotations

import io
import re
import time

import pytest
from rich.console import Console

from evalrun import cli_app
from evalrun.cli_app import _PlainProgress, _RichProgress, make_progress

LINE = re.compile(r"^gen: (started|running|finished|stopped): (\d+)/10 items, (.+), elapsed (.+), ETA (.+)$")


def _lines(stream: io.StringIO) -> list[re.Match[str]]:
    lines = stream.getvalue().splitlines()
    matches = [LINE.match(line) for line in lines]
    assert all(matches), lines
    return [m for m in matches if m]


@pytest.mark.slow
def test_lines_at_start_on_a_timer_and_at_the_end() -> None:
    stream = io.StringIO()
    progress = _PlainProgress(interval=0.25, stream=stream)
    progress.start("gen", 10, 2)  # two items stored before: the rate counts this session's only
    time.sleep(1.1)  # nothing finishes: the timer still reports the run is alive
    quiet = _lines(stream)
    assert quiet[0].group(1) == "started" and quiet[0].group(2) == "2"
    assert len(quiet) >= 3 and {m.group(1) for m in quiet[1:]} == {"running"}, stream.getvalue()
    assert all(m.group(3) == "rate unknown (no item finished yet)" and m.group(5) == "unknown" for m in quiet)
    progress.advance(2)
    time.sleep(0.6)
    progress.advance(6)
    progress.finish()
    lines = _lines(stream)
    moving = [m for m in lines if m.group(2) == "4"]
    assert moving, "a timer line after items finished"
    rate = moving[-1].group(3)
    number, unit = rate.split()
    per_second = float(number) if unit == "items/s" else 1 / float(number)
    assert 0.5 < per_second < 2, rate  # 2 items in the 1.1-1.7 s since the start
    assert moving[-1].group(5).endswith(" s") and moving[-1].group(5) != "0 s"  # six items left
    last = lines[-1]
    assert last.group(1) == "finished" and last.group(2) == "10" and last.group(5) == "0 s"
    count = len(lines)
    time.sleep(0.6)
    assert len(_lines(stream)) == count, "the timer stops with the run"


def test_a_run_that_stops_early_says_so() -> None:
    stream = io.StringIO()
    progress = _PlainProgress(interval=30, stream=stream)
    progress.start("gen", 10, 0)
    progress.advance(3)
    progress.finish()
    lines = _lines(stream)
    assert [m.group(1) for m in lines] == ["started", "stopped"], "no timer line within the interval"
    assert lines[-1].group(2) == "3" and "items/s" in lines[-1].group(3)


def test_a_terminal_keeps_the_rich_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_app, "err_console", Console(file=io.StringIO(), force_terminal=True))
    assert isinstance(make_progress(), _RichProgress)
    monkeypatch.setattr(cli_app, "err_console", Console(file=io.StringIO(), force_terminal=False))
    plain = make_progress(interval=5)
    assert isinstance(plain, _PlainProgress) and plain.interval == 5


def test_a_state_said_again_keeps_its_start() -> None:
    """A server's wait is said every few seconds (its elapsed time, its log's last line): the time
    left out of the items' rate is the whole wait, not only the part after the last update."""
    progress = _PlainProgress(interval=30, stream=io.StringIO())
    progress.start("gen", 10, 0)
    progress.note("starting server: 0 s of 300 s")
    time.sleep(0.3)
    progress.note("starting server: 5 s of 300 s")
    time.sleep(0.1)
    progress.note(None)
    assert progress._prep_seconds >= 0.4
    progress.finish()
