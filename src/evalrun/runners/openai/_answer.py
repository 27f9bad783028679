"""One served answer read off the wire (server-sent events or one JSON body), and whether the engine finished it.

An answer counts only when the server says why it ended with a `finish_reason` evalrun knows. A stream that
ends without one (llama-cpp-python's default `interrupt_requests` ends a running stream with `[DONE]` when
another request arrives; `abort`) is a cut answer: retried, and stored as the item's error if it stays cut,
never as a short answer. An empty stream is how llama-cpp-python streams a prompt past its context: retried
once only.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Literal

from evalrun.runners.openai._http import Transient
from evalrun.runners.openai._logprobs import ServedToken, tokens_of

# the answer is complete: the model stopped (OpenAI, vLLM, SGLang, llama.cpp: stop; TGI: eos_token,
# stop_sequence), called a tool, or the server's filter ended it (retrying gives the same)
FINISHED = frozenset({"stop", "eos_token", "stop_sequence", "tool_calls", "function_call", "content_filter"})
# the answer reached max_tokens: complete as asked, and counted (a cut-off can cost a field)
LENGTH = "length"
KNOWN = FINISHED | {LENGTH}

_INTERRUPT_HINT = ("llama-cpp-python's server ends a running stream this way when another request arrives "
                   "(its default interrupt_requests): start it with --interrupt_requests False, or set "
                   "openai.concurrency: 1")


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The data payload of each event in a stream of server-sent events (only `data:` matters for completions;
    an event ends at a blank line, its `data:` lines joined by newlines; comments and other fields skipped); a
    last event without its blank line is still given."""
    buffer: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if buffer:
                yield "\n".join(buffer)
                buffer = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            buffer.append(value[1:] if value.startswith(" ") else value)
    if buffer:
        yield "\n".join(buffer)


@dataclass
class Answer:
    """What one response carried: text, usage, chunk times (None: not streamed) and the finish reason."""

    text: str
    usage: dict[str, Any] | None
    stamps: list[float] | None
    finish_reason: str
    models: set[str] = field(default_factory=set)
    tokens: list[ServedToken] | None = None  # each generated token's logprobs, when the server sent them
    timings: dict[str, Any] | None = None  # the engine's own timings of it (llama.cpp's `timings`), when sent


def text_of(choice: dict[str, Any], endpoint: Literal["chat", "completions"], streamed: bool) -> str | None:
    """A choice's text: `text` for completions, the delta's (streamed) or message's content for chat."""
    if endpoint == "completions":
        return choice.get("text")
    part = choice.get("delta" if streamed else "message") or {}
    return part.get("content") if isinstance(part, dict) else None


def _cut(reason: str | None, done: bool, events: int) -> Transient:
    """The retryable failure for an answer the engine did not finish."""
    if events == 0:
        return Transient("stream empty: the server answered 200 and sent nothing (llama-cpp-python does this for a "
                         "prompt past its context)", item_only=True, max_retries=1)
    if reason is not None:
        return Transient(f"stream cut: the server ended the answer with finish_reason {reason!r}, not one that says "
                         f"it finished ({', '.join(sorted(KNOWN))})", item_only=True)
    if done:
        return Transient(f"stream cut: [DONE] came without a finish_reason: {_INTERRUPT_HINT}", item_only=True)
    return Transient("stream cut: it ended before the server said it was finished", item_only=True)


def finished(reason: Any) -> str:
    """`reason` when it says the answer is complete; else the answer is cut (Transient, for this item)."""
    if isinstance(reason, str) and reason in KNOWN:
        return reason
    raise Transient(f"answer cut: the server ended it with finish_reason {reason!r}, not one that says it finished "
                    f"({', '.join(sorted(KNOWN))})", item_only=True)


async def _drain(events: AsyncIterator[str], seconds: float = 1.0) -> None:
    """Read what follows [DONE] (the end of the chunked body, normally received with it) so the
    connection goes back to the pool: a response left unread is closed instead, and every request
    then opened a new connection (and on https a TLS handshake) of its own. A server that keeps
    the stream open after [DONE] is given `seconds`, then the connection is closed as before."""

    async def rest() -> None:
        async for _ in events:
            pass

    try:
        await asyncio.wait_for(rest(), seconds)
    except asyncio.TimeoutError:
        pass  # a server that keeps the stream open after [DONE]: its connection is closed, as before


def read_json(raw: bytes, endpoint: Literal["chat", "completions"]) -> Answer:
    """A whole (not streamed) answer."""
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        raise Transient(f"malformed answer: {raw[:200]!r}") from None
    models = {str(data["model"])} if isinstance(data, dict) and data.get("model") else set()
    timings = data.get("timings")
    return Answer(text_of(choice, endpoint, False) or "", data.get("usage"), None,
                  finished(choice.get("finish_reason")), models, tokens_of(choice, endpoint),
                  timings if isinstance(timings, dict) else None)


async def read_stream(lines: AsyncIterator[str], endpoint: Literal["chat", "completions"],
                      scrub: Callable[[str], str]) -> Answer:
    """A streamed (SSE) answer; an answer the server did not finish raises Transient (for this item)."""
    parts: list[str] = []
    stamps: list[float] = []  # perf_counter at each chunk that carried text
    usage = None
    reason: str | None = None
    done = False
    count = 0
    models: set[str] = set()
    tokens: list[ServedToken] | None = None
    timings: dict[str, Any] | None = None
    events = sse_data(lines)
    async for data in events:
        count += 1
        if data.strip() == "[DONE]":
            done = True
            await _drain(events)
            break
        try:
            chunk = json.loads(data)
        except ValueError:
            raise Transient(f"malformed stream chunk: {data[:200]!r}") from None
        if not isinstance(chunk, dict):
            raise Transient(f"malformed stream chunk: {data[:200]!r}")
        if chunk.get("error"):
            raise Transient(f"error in stream: {scrub(json.dumps(chunk['error']))[:300]}")
        if chunk.get("model"):
            models.add(str(chunk["model"]))
        if chunk.get("usage"):
            usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):  # llama-server: in the last chunk, the whole answer's
            timings = chunk["timings"]
        for choice in chunk.get("choices") or []:
            piece = text_of(choice, endpoint, True)
            if piece:
                stamps.append(time.perf_counter())
                parts.append(piece)
            carried = tokens_of(choice, endpoint)
            if carried is not None:
                tokens = (tokens or []) + carried
            if choice.get("finish_reason"):
                reason = str(choice["finish_reason"])
    if reason not in KNOWN:
        raise _cut(reason, done, count)
    assert reason is not None
    return Answer("".join(parts), usage, stamps, reason, models, tokens, timings)
