"""The in-process Hugging Face runner: static and continuous batching, prefix reuse, token timing.

The runner itself (`runner`), `prefix` and `token_clock` load torch or transformers: import them by name."""

from __future__ import annotations

from evalrun.runners.hf._continuous import BatchingSettings, ContinuousRun

__all__ = ["BatchingSettings", "ContinuousRun"]
