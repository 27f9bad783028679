"""One-time preparation (a compile, a model conversion) said in words while it runs.

A first use that compiles an extension or converts weights can take minutes
before the first item; without a word, a progress line reads "0/25 items, rate
unknown" for all that time. The code that prepares wraps the work in
`preparing(cause, estimate)`; whoever shows progress listens with `listening`
(the progress line then names the cause and the estimate); with no listener the
announcement is one line on stderr.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

# called with the announcement when preparation starts, and with None when it ends
Listener = Callable[[str | None], None]

_listeners: list[Listener] = []


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Route announcements made inside the block to `listener` (None: no change)."""
    if listener is None:
        yield
        return
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def announcement(cause: str, estimate: str) -> str:
    return f"preparing: {cause} ({estimate})"


@contextmanager
def preparing(cause: str, estimate: str) -> Iterator[None]:
    """Announce one-time work (`cause`, with an `estimate` such as "first use, about 2 min on 2 cores")."""
    text = announcement(cause, estimate)
    listener = _listeners[-1] if _listeners else None
    started = time.monotonic()
    if listener is not None:
        listener(text)
    else:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    try:
        yield
    finally:
        if listener is not None:
            listener(None)
        else:
            sys.stderr.write(f"prepared in {time.monotonic() - started:.0f} s: {cause}\n")
            sys.stderr.flush()


def say(text: str | None) -> None:
    """A passing state (a server starting: its elapsed time and last log line) to whoever shows progress,
    or a line on stderr; None: the state is over (nothing is printed without a listener)."""
    listener = _listeners[-1] if _listeners else None
    if listener is not None:
        listener(text)
    elif text is not None:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


__all__ = ["Listener", "announcement", "listening", "preparing", "say"]
