"""A served run, as the speed table shows it: its engine, and the engine's own timings beside the client's.

A served candidate's acceleration is applied by the engine, not `acceleration:`, so its label is the server flags
the baseline's lacks (`--type_k 2 --flash_attn true`). Engine timings are means (docs/speed.md, 'The server's
own timings')."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field as PydField


def _launch(manifest: dict[str, Any]) -> dict[str, Any]:
    return ((manifest.get("model") or {}).get("identity") or {}).get("server_launch") or {}


def engine_name(manifest: dict[str, Any]) -> str:
    """The engine and its version: the launch's version, else the config's `engine:`."""
    engine = (manifest.get("config") or {}).get("engine") or {}
    declared = " ".join(str(v) for v in (engine.get("name"), engine.get("version")) if v)
    return str(_launch(manifest).get("version") or declared or "served engine")


def flags(manifest: dict[str, Any]) -> dict[str, str]:
    """The server's command (or `engine.args`) as flag -> value, `openai.extra_body` as body.KEY, words as #i."""
    config = manifest.get("config") or {}
    words = [str(w) for w in _launch(manifest).get("command") or (config.get("engine") or {}).get("args") or []]
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and len(word) > 1:
            takes = i + 1 < len(words) and not words[i + 1].startswith("--")
            out[word] = words[i + 1] if takes else ""
            i += 2 if takes else 1
        else:
            out[f"#{i}"] = word
            i += 1
    for key, value in sorted(((config.get("openai") or {}).get("extra_body") or {}).items()):
        out[f"body.{key}"] = str(value)
    return out


def flag_changes(baseline: dict[str, Any], candidate: dict[str, Any]) -> list[str]:
    """The candidate's flags that the baseline lacks or sets otherwise, then the baseline's it drops."""
    base, cand = flags(baseline), flags(candidate)
    changed = [f"{k} {v}".strip() if not k.startswith("#") else v for k, v in cand.items() if base.get(k) != v]
    return changed + [f"no {k}" for k in base if k not in cand and not k.startswith("#")]


def engine_label(manifest: dict[str, Any], baseline: dict[str, Any] | None = None) -> str | None:
    """"llama-cpp-python 0.3.36: --type_k 2 --flash_attn true"; the engine alone for a baseline; None in process."""
    if manifest.get("runner") != "openai":
        return None
    name = engine_name(manifest)
    if baseline is None or baseline.get("key") == manifest.get("key"):
        return name
    changes = flag_changes(baseline, manifest)
    other = engine_name(baseline)
    versus = f" (baseline: {other})" if other != name else ""
    return f"{name}: {' '.join(changes) if changes else 'the baseline flags'}{versus}"


class ServerTimings(BaseModel):
    """The manifest's `server.engine_timings`, as the table shows it: means in seconds."""

    source: str | None  # None: the server reports no timings
    requests: int | None = None  # requests the engine timed
    requests_answered: int | None = None  # requests the client had answered meanwhile
    means: dict[str, float] = PydField(default_factory=dict)  # ttft, tpot, itl, e2e, queue, prefill, decode: those given
    note: str | None = None

    def first_token(self) -> tuple[str, float] | None:
        """The engine's time to the first token: its TTFT, else its prompt processing (llama.cpp's prompt_ms)."""
        return next(((name, self.means[name]) for name in ("ttft", "prefill") if name in self.means), None)

    def per_token(self) -> tuple[str, float] | None:
        """The engine's time per output token: its TPOT, else its inter-token latency."""
        return next(((name, self.means[name]) for name in ("tpot", "itl") if name in self.means), None)


def server_timings(server: dict[str, Any] | None) -> ServerTimings | None:
    """None for a run in process, or a served one stored before engine timings were recorded."""
    record = (server or {}).get("engine_timings")
    if not isinstance(record, dict):
        return None
    means = record.get("means_seconds") or {}
    return ServerTimings(source=record.get("source"), requests=record.get("requests"),
                         requests_answered=record.get("requests_answered"),
                         means={k: float(v) for k, v in means.items() if isinstance(v, (int, float))},
                         note=record.get("note"))


def note(rows: list[tuple[str, ServerTimings | None]]) -> str | None:
    """Where each served run's engine timings come from, in one sentence; None when no run is served."""
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

