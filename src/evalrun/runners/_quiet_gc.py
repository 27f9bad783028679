"""The heap frozen while a run is timed, so the garbage collector's full passes stay short.

A process that has loaded transformers, a tokenizer and torch holds hundreds of thousands
of objects; a full (generation 2) collection walks all of them and, measured in the openai
runner's process, stopped every thread for 60-290 ms at a time, each pause landing inside
some requests' TTFT or ITL. vLLM's `bench serve` does the same before it sends anything
(`gc.collect(); gc.freeze()`): what existed before the run is left out of every collection
while it runs; what the run creates is collected as usual.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the objects that exist now out of every collection until the end (unfrozen only when
    this call froze them, so a caller's own freeze stays). No collection first: it would cost as
    much as the pause it avoids; garbage frozen with the rest waits for the next one after the run."""
    ours = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        yield
    finally:
        if ours:
            gc.unfreeze()
