"""Server-sent events, as OpenAI-compatible servers stream completions.

Only the `data:` field matters for completions; an event ends at a blank
line and several `data:` lines of one event are joined by newlines (the SSE
specification). Comments (`:` lines) and other fields are skipped.
"""

from __future__ import annotations

from typing import AsyncIterator


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The data payload of each event in a stream of lines; a last event without its blank line is still given."""
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
