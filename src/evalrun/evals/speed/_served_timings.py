"""A served run's own engine timings, for the speed table beside the client's figures.

The client's TTFT and TPOT (p50) include the network, HTTP framing and
streaming; the engine's figures (runners/openai/_engine_timings.py: vLLM's
/metrics histograms, llama.cpp's per-answer `timings`) do not. They are means
(a histogram's sum over its count), labelled as the server's wherever shown;
a server that reports none shows a dash and says so.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field as PydField


class ServerTimings(BaseModel):
    """The manifest's `server.engine_timings`, as the table shows it: means in seconds."""

    source: str | None  # None: the server reports no timings
    requests: int | None = None  # requests the engine timed
    requests_answered: int | None = None  # requests the client had answered meanwhile
    means: dict[str, float] = PydField(default_factory=dict)  # ttft, tpot, itl, e2e, queue, prefill, decode: those given
    note: str | None = None

    def first_token(self) -> tuple[str, float] | None:
        """The engine's time to the first token: its TTFT, else its prompt processing (llama.cpp's prompt_ms)."""
        for name in ("ttft", "prefill"):
            if name in self.means:
                return name, self.means[name]
        return None

    def per_token(self) -> tuple[str, float] | None:
        """The engine's time per output token: its TPOT, else its inter-token latency."""
        for name in ("tpot", "itl"):
            if name in self.means:
                return name, self.means[name]
        return None


def server_timings(server: dict[str, Any] | None) -> ServerTimings | None:
    """A served run's engine timings (None for a run in process, or a served one stored before they were
    recorded)."""
    record = (server or {}).get("engine_timings")
    if not isinstance(record, dict):
        return None
    means = record.get("means_seconds") or {}
    return ServerTimings(source=record.get("source"), requests=record.get("requests"),
                         requests_answered=record.get("requests_answered"),
                         means={k: float(v) for k, v in means.items() if isinstance(v, (int, float))},
                         note=record.get("note"))


def note(rows: list[tuple[str, ServerTimings | None]]) -> str | None:
    """Where each served run's engine timings come from, in one sentence (runs grouped by source); None when
    no run is served."""
    by_source: dict[str, list[str]] = {}
    for run, t in rows:
        if t is None:
            continue
        if t.source is None:
            by_source.setdefault(t.note or "the server reports no timings", []).append(run)
            continue
        other = "" if t.requests_answered in (None, t.requests) else \
            f", the client counted {t.requests_answered} answered: another client's requests, or a lost scrape"
        by_source.setdefault(t.source, []).append(f"{run} ({t.requests} requests{other})")
    if not by_source:
        return None
    return ("Server timings are the engine's own clock, means over the requests it timed (not p50: a histogram "
            "gives sums and counts), without the network and HTTP the client's figures include; TTFT falls back "
            "to the engine's prompt processing time and TPOT to its inter-token latency where it reports only "
            "those. " + "; ".join(f"{', '.join(runs)}: {source}" for source, runs in by_source.items()) + ".")


__all__ = ["ServerTimings", "note", "server_timings"]
