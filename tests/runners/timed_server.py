"""An OpenAI-compatible server whose timings are known: the ground truth the openai runner's
speed metrics are checked against.

Real HTTP/1.1 on loopback, real SSE streaming (chunked transfer encoding), asyncio so 32
and more streams are served at once from one thread. Each streamed answer sends its first
token T ms after the request arrived and then one token per chunk every D ms (with optional
seeded jitter of +-J ms per gap, and a slow tail: a chosen share of the requests, picked by
arrival index, gets its TTFT and/or its gaps multiplied). Every chunk is scheduled at an
absolute deadline (arrival + T + the intended gaps so far), so lateness never accumulates.

Per request the server records what it meant to do (the intended TTFT and every intended
gap, counted from when the request's last bytes came in) and what it did (the perf_counter
right after each text chunk was written), so a test can tell a client's measurement error
from the server's own scheduling error. Deadlines are kept by a ticker thread rather than
the loop's timeouts (Python rounds epoll waits up to whole milliseconds).

The server runs in a background thread with its own event loop, by default inside a child
process (see `timed_server`).

    with timed_server(Timing(ttft_ms=40, gap_ms=5)) as (base_url, state):
        ...  # point an OpenAIRunner at base_url
    state.records  # what was injected and sent, also after the server has stopped
"""

from __future__ import annotations

import asyncio
import heapq
import json
import math
import random
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Timing:
    """What every streamed answer's timing is meant to be (milliseconds)."""

    ttft_ms: float = 40.0
    gap_ms: float = 5.0
    jitter_ms: float = 0.0  # each gap drawn uniformly from gap +- jitter (seeded per request)
    ttft_jitter_ms: float = 0.0  # TTFT drawn uniformly from ttft +- this (requests not in lockstep)
    seed: int = 0
    slow_share: float = 0.0  # this share of the requests, by arrival index, is the slow tail
    slow_ttft_factor: float = 1.0
    slow_gap_factor: float = 1.0

    def is_slow(self, index: int) -> bool:
        """Exactly round(n * share) of the first n arrivals, spread evenly (deterministic)."""
        return math.floor((index + 1) * self.slow_share + 1e-9) > math.floor(index * self.slow_share + 1e-9)

    def plan(self, index: int, tokens: int) -> tuple[bool, float, list[float]]:
        """(slow?, intended TTFT in s, intended gaps in s) for the `index`-th request."""
        slow = self.is_slow(index)
        rng = random.Random(f"timed-server:{self.seed}:{index}")
        ttft = self.ttft_ms * (self.slow_ttft_factor if slow else 1.0)
        ttft = max(0.0, ttft + (rng.uniform(-self.ttft_jitter_ms, self.ttft_jitter_ms) if self.ttft_jitter_ms else 0.0))
        ttft /= 1000.0
        gap = self.gap_ms * (self.slow_gap_factor if slow else 1.0)
        gaps = [max(0.0, gap + (rng.uniform(-self.jitter_ms, self.jitter_ms) if self.jitter_ms else 0.0)) / 1000.0
                for _ in range(tokens - 1)]
        return slow, ttft, gaps


@dataclass
class StreamRecord:
    """One streamed answer: what was intended and when each text chunk actually went out."""

    index: int  # arrival order, from 0
    prompt: str  # the last user message, to match the request to its item
    arrived: float  # perf_counter when the request's last bytes came in (it was complete)
    arrived_unix: float
    slow: bool
    ttft: float  # intended, seconds after `arrived`
    gaps: list[float]  # intended, seconds between successive text chunks
    sent: list[float] = field(default_factory=list)  # perf_counter right after each text chunk was written
    done: float | None = None  # perf_counter after [DONE]; None: the stream did not finish

    @property
    def tokens(self) -> int:
        return len(self.gaps) + 1

    def intended(self, metric: str) -> list[float]:
        """The injected value(s) of a metric for this request (ITL: every gap)."""
        return _metric(metric, self.ttft, self.gaps)

    def actual(self, metric: str) -> list[float]:
        """The same from the server's own send times (its scheduling error included)."""
        gaps = [b - a for a, b in zip(self.sent, self.sent[1:])]
        return _metric(metric, self.sent[0] - self.arrived, gaps)


def _metric(metric: str, ttft: float, gaps: list[float]) -> list[float]:
    if metric == "ttft":
        return [ttft]
    if metric == "itl":
        return list(gaps)
    if metric == "tpot":
        return [sum(gaps) / len(gaps)] if gaps else []
    if metric == "e2el":
        return [ttft + sum(gaps)]
    raise ValueError(metric)


@dataclass
class TimedState:
    """The server's settings and what it saw."""

    timing: Timing = field(default_factory=Timing)
    model_name: str = "smollm2-135m"
    records: list[StreamRecord] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # a server in a child process: asked for its records whenever they are read here
    remote: Callable[[], dict[str, Any]] | None = None

    def sync(self) -> None:
        """Bring `records` and `max_in_flight` up to date from a server in a child process."""
        if self.remote is not None:
            dump = self.remote()
            self.records = [StreamRecord(**r) for r in dump["records"]]
            self.max_in_flight = dump["max_in_flight"]

    def finished(self) -> list[StreamRecord]:
        self.sync()
        with self.lock:
            return [r for r in self.records if r.done is not None]

    def values(self, metric: str, source: str = "intended") -> list[float]:
        """One metric over every finished stream: `intended` (injected) or `actual` (server send times)."""
        return [v for r in self.finished() for v in getattr(r, source)(metric)]

    def distribution(self, metric: str, percentiles: tuple[float, ...], source: str = "intended") -> dict[str, Any]:
        """The injected percentiles, by the same `evals.stats.percentile` the metrics use."""
        from evalrun.evals.stats import percentile

        vals = self.values(metric, source)
        return {f"p{q:g}": percentile(vals, q) for q in percentiles} | {"n": len(vals)}


# -- HTTP/1.1 ---------------------------------------------------------------------------------------------


def _head(status: str, headers: dict[str, str]) -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode()


def _json(writer: asyncio.StreamWriter, status: str, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    writer.write(_head(status, {"Content-Type": "application/json", "Content-Length": str(len(data))}) + data)


def _event(payload: str) -> bytes:
    """One SSE event as one HTTP chunk."""
    data = f"data: {payload}\n\n".encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes] | None:
    """(method, path, headers, body), or None when the client closed the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
    return method, path, headers, body


class _Stamped(asyncio.StreamReaderProtocol):
    """Streams, plus the perf_counter at which bytes last came in: taken in the transport's read
    callback, before any parsing, so of a burst of requests that the loop parses one after
    another each still gets the time its last bytes arrived (when the request was complete)."""

    def __init__(self, handler: Any):
        super().__init__(asyncio.StreamReader(limit=1 << 20), handler)
        self.last_data_at: float | None = None

    def data_received(self, data: bytes) -> None:
        self.last_data_at = time.perf_counter()
        super().data_received(data)


async def _connection(state: TimedState, ticker: _Ticker, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
    """Requests on one keep-alive connection, one after another (as HTTP/1.1 without pipelining,
    so the last bytes read belong to the request just parsed)."""
    protocol = writer.transport.get_protocol()
    try:
        while (request := await _read_request(reader)) is not None:
            now = time.perf_counter()
            arrived = getattr(protocol, "last_data_at", None) or now
            arrived_unix = time.time() - (now - arrived)
            method, path, headers, body = request
            if method == "GET" and path == "/v1/models":
                _json(writer, "200 OK", {"object": "list", "data": [
                    {"id": state.model_name, "object": "model", "owned_by": "timed-server", "root": "timed"}]})
            elif method == "POST" and path == "/v1/chat/completions":
                await _stream(state, ticker, writer, json.loads(body or b"{}"), arrived, arrived_unix)
            else:
                _json(writer, "404 Not Found", {"error": {"message": f"no route {method} {path}", "code": 404}})
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                break
    except (ConnectionError, asyncio.IncompleteReadError):
        pass  # the client hung up
    finally:
        writer.close()


class _Ticker:
    """Wakes coroutines at absolute perf_counter deadlines from a thread of its own that sleeps
    with a timed lock wait (tens of microseconds late) rather than the event loop's epoll timeout,
    which Python rounds up to whole milliseconds; the loop is woken through its self-pipe."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self.cv = threading.Condition()
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name="timed-server-ticker", daemon=True)
        self.thread.start()

    async def until(self, deadline: float) -> None:
        if deadline <= time.perf_counter():
            return
        fut: asyncio.Future[None] = self.loop.create_future()
        with self.cv:
            heapq.heappush(self.heap, (deadline, id(fut), fut))
            self.cv.notify()
        await fut

    def stop(self) -> None:
        with self.cv:
            self.stopped = True
            self.cv.notify()
        self.thread.join(5)

    def _run(self) -> None:
        with self.cv:
            while not self.stopped:
                if not self.heap:
                    self.cv.wait()
                    continue
                delay = self.heap[0][0] - time.perf_counter()
                if delay > 0:
                    self.cv.wait(delay)
                    continue
                due = []
                while self.heap and self.heap[0][0] <= time.perf_counter():
                    due.append(heapq.heappop(self.heap)[2])
                self.loop.call_soon_threadsafe(_wake, due)


def _wake(due: list[asyncio.Future[None]]) -> None:
    for fut in due:
        if not fut.done():
            fut.set_result(None)


async def _stream(state: TimedState, ticker: _Ticker, writer: asyncio.StreamWriter, body: dict[str, Any],
                  arrived: float, arrived_unix: float) -> None:
    """One streamed chat completion at the injected timings."""
    user = next((m.get("content", "") for m in reversed(body.get("messages") or []) if m.get("role") == "user"), "")
    tokens = max(1, int(body.get("max_tokens", 16)))
    with state.lock:
        index = len(state.records)
        slow, ttft, gaps = state.timing.plan(index, tokens)
        record = StreamRecord(index, user, arrived, arrived_unix, slow, ttft, gaps)
        state.records.append(record)
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
    ident, model = f"chatcmpl-{index}", state.model_name

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _event(json.dumps({"id": ident, "object": "chat.completion.chunk", "model": model,
                                  "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))

    try:
        writer.write(_head("200 OK", {"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                      "Transfer-Encoding": "chunked"}))
        writer.write(chunk({"role": "assistant", "content": ""}))  # as vLLM: the role first, no text yet
        await writer.drain()
        deadline = arrived + ttft
        for k in range(tokens):
            if k:
                deadline += gaps[k - 1]
            data = chunk({"content": f" tok{k}"})  # made before the deadline: at it, only the write
            await ticker.until(deadline)
            writer.write(data)
            record.sent.append(time.perf_counter())
            await writer.drain()
        writer.write(chunk({}, "length"))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": len(user.split()), "completion_tokens": tokens,
                     "total_tokens": len(user.split()) + tokens}
            writer.write(_event(json.dumps({"id": ident, "object": "chat.completion.chunk", "model": model,
                                            "choices": [], "usage": usage})))
        writer.write(_event("[DONE]") + b"0\r\n\r\n")
        await writer.drain()
        record.done = time.perf_counter()
    finally:
        with state.lock:
            state.in_flight -= 1


# -- where the server runs ------------------------------------------------------------------------------------


@contextmanager
def timed_server(timing: Timing | None = None, model_name: str = "smollm2-135m",
                 process: bool = True) -> Iterator[tuple[str, TimedState]]:
    """Serve on 127.0.0.1 (an ephemeral port); yields (base_url ending in /v1, state).

    The server runs in a background thread with its own event loop. With `process` (the
    default) that thread lives in a child process, as a real server would: in the client's
    own process it shares the client's GIL, so the runner's work (parsing 32 streams, starting
    requests) holds back the server's reads and sends by milliseconds and the ground truth
    bends with the very load being measured. perf_counter is the system's monotonic clock, so
    the child's timestamps compare with the parent's; `state` fetches them when read."""
    timing = timing or Timing()
    if not process:
        state = TimedState(timing, model_name)
        with _in_thread(state) as base_url:
            yield base_url, state
        return
    child = subprocess.Popen([sys.executable, "-m", "tests.runners.timed_server", json.dumps(asdict(timing)), model_name],
                             cwd=_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    state: TimedState | None = None
    try:
        base_url = child.stdout.readline().strip()
        if not base_url.startswith("http://"):
            raise RuntimeError(f"the timed server did not start (it said {base_url!r})")
        state = TimedState(timing, model_name, remote=_Remote(child))
        yield base_url, state
    finally:
        if state is not None and child.poll() is None:
            state.sync()  # the last word, readable after the server has gone
            state.remote = None
        child.stdin.close()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


class _Remote:
    """Asks the child process for its records (one JSON line per ask)."""

    def __init__(self, child: subprocess.Popen[str]):
        self.child = child

    def __call__(self) -> dict[str, Any]:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write("state\n")
        self.child.stdin.flush()
        return json.loads(self.child.stdout.readline())


@contextmanager
def _in_thread(state: TimedState) -> Iterator[str]:
    """The server in a background thread of this process, with its own event loop."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def serve() -> None:
        tasks: set[asyncio.Task[Any]] = set()
        ticker = _Ticker(loop)

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            tasks.add(task)
            try:
                await _connection(state, ticker, reader, writer)
            except asyncio.CancelledError:
                pass  # the server is stopping: a connection still open is simply closed
            finally:
                tasks.discard(task)

        server = await loop.create_server(lambda: _Stamped(handle), "127.0.0.1", 0, backlog=1024)
        box["port"] = server.sockets[0].getsockname()[1]
        box["stop"] = stop = loop.create_future()
        ready.set()
        await stop
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()
        ticker.stop()

    def main() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(serve())
        finally:
            loop.close()

    thread = threading.Thread(target=main, name="timed-server", daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("the timed server did not start")
    try:
        yield f"http://127.0.0.1:{box['port']}/v1"
    finally:
        loop.call_soon_threadsafe(lambda: box["stop"].done() or box["stop"].set_result(None))
        thread.join(10)


def _child_main(argv: list[str]) -> None:
    """`python -m tests.runners.timed_server TIMING_JSON MODEL`: print the base URL, answer each
    `state` line on stdin with the records as one JSON line, stop at the end of stdin."""
    state = TimedState(Timing(**json.loads(argv[0])), argv[1])
    with _in_thread(state) as base_url:
        print(base_url, flush=True)
        for line in sys.stdin:
            if line.strip() == "state":
                with state.lock:
                    dump = {"records": [asdict(r) for r in state.records], "max_in_flight": state.max_in_flight}
                print(json.dumps(dump), flush=True)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
