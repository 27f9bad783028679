"""The one fake OpenAI-compatible server of the tests: real HTTP/1.1 on loopback (an OS-chosen port on
127.0.0.1), real SSE streaming (chunked transfer encoding), one thread per connection.

It serves /v1/models, /v1/chat/completions and /v1/completions the way vLLM does, closely enough for the
`openai` runner to be tested against the wire protocol rather than against mocks, and a Prometheus
/metrics text a test sets. What it answers is its backend's:

- `HFBackend`: real answers from the default model through the `hf` runner, token by token;
- `ScriptedBackend`: exact answers to needle questions without a model, one word a token, at a set pace;
- `ExactBackend`: one whole answer per prompt, the same on every request (`gold_answers`: the gold
  values of known items, or deliberately wrong ones);
- `TimedBackend`: `tok0 tok1 ...` at injected timings, the ground truth the speed metrics are checked
  against (see `Timing` and `timed_server`).

How it behaves is its `ServerState`'s: faults injected on request (500, 503, 400, 429 with Retry-After,
a connection dropped mid-stream, an answer slower than the client's timeout, a revoked key, an engine's
"abort"), and two ways real servers end answers that were never finished: llama-cpp-python's default
`interrupt_requests` (a request that arrives while another streams ends that stream with `[DONE]` and no
finish_reason) and a served context that a prompt does not fit (a 400 `context_length_exceeded`, or a 200
with an empty stream). The model backends serialise generation (one model, one CPU), so requests queue as
on a busy engine. Every generation request is recorded (when it arrived, how it ended, the perf_counter
right after each text chunk was written), and how many were open at once, so tests see the client's
concurrency bound and timings from the server.
"""

from __future__ import annotations

import hashlib
import json
import math
import queue
import random
import re
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:  # the timed server's child process starts without importing evalrun
    from evalrun.contract.types import Item

_ROOT = Path(__file__).resolve().parents[2]

# "abort": the answer ends at once with finish_reason "abort" (an engine that dropped the request), streamed or not
FAULTS = ("500", "503", "429", "drop", "slow", "400", "401", "abort")


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
class RequestRecord:
    """One generation request as the server saw it: what was intended and what was sent."""

    path: str
    key: str  # hash of the prompt (messages or text), to tell items apart
    arrived: float  # perf_counter when its request line came in
    fault: str | None
    index: int = 0  # arrival order, from 0
    prompt: str = ""  # the last user message (chat) or the prompt, to match the request to its item
    status: int = 0
    finished: float = 0.0
    interrupted: bool = False  # ended with [DONE] and no finish_reason because another request arrived
    # TimedBackend's plan: in the slow tail?, intended TTFT (s after `arrived`), intended gaps between text chunks
    slow: bool = False
    ttft: float = 0.0
    gaps: list[float] = field(default_factory=list)
    sent: list[float] = field(default_factory=list)  # perf_counter right after each streamed text chunk was written
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
class ServerState:
    """What the server does and what it saw; tests set the first part and read the second."""

    model_name: str = "smollm2-135m"
    api_key: str | None = None
    stream_supported: bool = True
    list_models: bool = True
    # consumed one per generation request, in arrival order
    faults: list[str] = field(default_factory=list)
    retry_after: int = 1
    slow_seconds: float = 3.0
    # answer this many generation requests, then refuse every further one with 401 (a key revoked mid-run)
    revoke_after: int | None = None
    # llama-cpp-python's default: a request waiting for the model ends the running stream ([DONE], no finish_reason)
    interrupt_requests: bool = False
    # the served context (prompt + max_tokens, as vLLM counts): a request past it is refused, by a 400
    # `context_length_exceeded` (vLLM, OpenAI) or a 200 whose stream is empty (llama-cpp-python streaming)
    context_length: int | None = None
    context_refusal: str = "400"  # "400" | "empty"
    report_context: bool = True  # /models says max_model_len (vLLM and SGLang do; llama.cpp servers do not)
    # a 401 quotes the Authorization header it got, raw and encoded (servers and proxies that echo requests)
    echo_key: bool = False
    # vLLM's `prompt_logprobs` for a completions request that asks for them (the teacher-forced read): the
    # list this gives the request's body; None: the field is never sent (llama.cpp's servers)
    prompt_logprobs: Callable[[dict[str, Any]], list[Any]] | None = None
    # GET /metrics answers this Prometheus text (None: a 404); `metrics_gets` counts the asks
    metrics: str | None = None
    metrics_gets: int = 0
    records: list[RequestRecord] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # a server in a child process (`timed_server`): asked for its records whenever they are read here
    remote: Callable[[], dict[str, Any]] | None = None

    def completed(self) -> list[RequestRecord]:
        """Requests answered in full (a dropped stream is 598, a request the client gave up on 599)."""
        return [r for r in self.records if r.status == 200]

    def sync(self) -> None:
        """Bring `records` and `max_in_flight` up to date from a server in a child process."""
        if self.remote is not None:
            dump = self.remote()
            self.records = [RequestRecord(**r) for r in dump["records"]]
            self.max_in_flight = dump["max_in_flight"]

    def finished(self) -> list[RequestRecord]:
        """The streams that reached their [DONE]."""
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


# -- backends: what the server answers ----------------------------------------------------------------------


class HFBackend:
    """Greedy generation with the hf runner's model, tokenizer and chat template, token by token."""

    def __init__(self, model: str = "smollm2-135m"):
        from evalrun.runners.hf.runner import HFRunner
        from evalrun.runners.models import resolve_model

        self.runner = HFRunner(resolve_model(model), "cpu", "float32", [], batch_size=1)
        self.runner._ensure_loaded()
        self.gen_lock = threading.Lock()
        self.count_lock = threading.Lock()
        self.queued = 0  # requests waiting for the model (what llama-cpp-python's interrupt looks at)

    def prompt_tokens(self, text: str) -> int:
        return len(self.runner.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_of(self, body: dict[str, Any], chat: bool) -> str:
        from evalrun.contract.types import Item

        if not chat:
            return str(body["prompt"])
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), None)
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return self.runner.render(Item(id="server", pack="server", prompt=user, system=system, fields=[]))

    def stream(self, text: str, body: dict[str, Any], usage: dict[str, int],
               waiting: Callable[[], None] | None = None, record: RequestRecord | None = None) -> Iterator[str]:
        """Text pieces as tokens come out of `generate`, decoded incrementally (held back while a
        character is incomplete); fills `usage` at the end. Same arguments as the hf runner's call.
        `waiting` is called every half second while the request queues for the model."""
        import torch
        from transformers.generation.streamers import BaseStreamer

        tok = self.runner.tokenizer
        tokens: queue.Queue[list[int] | None] = queue.Queue()

        class _Ids(BaseStreamer):
            def __init__(self) -> None:
                self.prompt_seen = False

            def put(self, value: Any) -> None:
                if not self.prompt_seen:  # generate hands the prompt over first
                    self.prompt_seen = True
                    return
                tokens.put(value.reshape(-1).tolist())

            def end(self) -> None:
                tokens.put(None)

        enc = tok([text], return_tensors="pt", add_special_tokens=False)
        temperature = float(body.get("temperature") or 0.0)
        sampling = temperature > 0
        failure: list[BaseException] = []

        def work() -> None:
            try:
                if sampling:
                    torch.manual_seed(int(body.get("seed", 0)))
                with torch.no_grad():
                    self.runner.model.generate(
                        **enc, max_new_tokens=int(body.get("max_tokens", 16)), do_sample=sampling,
                        temperature=temperature if sampling else None,
                        top_p=float(body.get("top_p", 1.0)) if sampling else None, top_k=None,
                        pad_token_id=tok.pad_token_id, streamer=_Ids(),
                    )
            except BaseException as exc:  # surfaced to the request below
                failure.append(exc)
                tokens.put(None)

        stop_ids = {tok.eos_token_id, tok.pad_token_id} - {None}
        ids: list[int] = []
        sent = ""
        stopped = False
        _wait_for(self, waiting)
        try:
            thread = threading.Thread(target=work, daemon=True)
            thread.start()
            try:
                while (got := tokens.get()) is not None:
                    for t in got:
                        if stopped:
                            continue
                        ids.append(t)
                        stopped = t in stop_ids
                        now = tok.decode(ids, skip_special_tokens=True)
                        if now.startswith(sent) and not now.endswith("\ufffd") and len(now) > len(sent):
                            yield now[len(sent):]
                            sent = now
            finally:
                thread.join()  # an abandoned answer still holds the model until its generate ends
        finally:
            self.gen_lock.release()
        if failure:
            raise failure[0]
        final = tok.decode(ids, skip_special_tokens=True)
        if not final.startswith(sent):
            raise RuntimeError("incremental decoding diverged from the final text")
        if len(final) > len(sent):
            yield final[len(sent):]
        usage.update(prompt_tokens=int(enc["input_ids"].shape[1]), completion_tokens=len(ids),
                     total_tokens=int(enc["input_ids"].shape[1]) + len(ids))
        usage["finish"] = int(stopped)


def _wait_for(backend: Any, waiting: Callable[[], None] | None) -> None:
    """Take the backend's model lock, counted as queued meanwhile; `waiting` every half second."""
    with backend.count_lock:
        backend.queued += 1
    try:
        while not backend.gen_lock.acquire(timeout=0.5):
            if waiting is not None:
                waiting()
    finally:
        with backend.count_lock:
            backend.queued -= 1


_NEEDLE = re.compile(r"special magic number for (\w+) is ([^\s]+?)\.?(?:\s|$)")


def needle_answer(prompt: str) -> str:
    """The exact answer to a needle question: the number the text gives for the city asked about."""
    asked = re.search(r"magic number for (\w+) mentioned", prompt)
    found = {city: number for city, number in _NEEDLE.findall(prompt)}
    return found.get(asked.group(1), "unknown") if asked else "unknown"


def _joined(body: dict[str, Any], chat: bool, sep: str) -> str:
    """The prompt, or every message's text (system first) joined by `sep`."""
    if not chat:
        return str(body["prompt"])
    return sep.join(str(m["content"]) for m in body["messages"])


class ScriptedBackend:
    """Answers without a model: `answer(prompt)` split into words, one word a token, one token every
    `seconds_per_token` (so requests overlap as on a busy engine); prompts are sized in words.
    Serialised like the model backend: one request generates at a time, the others queue."""

    def __init__(self, answer: Callable[[str], str] = needle_answer, seconds_per_token: float = 0.01):
        self.answer = answer
        self.seconds_per_token = seconds_per_token
        self.gen_lock = threading.Lock()
        self.count_lock = threading.Lock()
        self.queued = 0

    def prompt_tokens(self, text: str) -> int:
        return len(text.split())

    def prompt_of(self, body: dict[str, Any], chat: bool) -> str:
        return _joined(body, chat, "\n\n")

    def stream(self, text: str, body: dict[str, Any], usage: dict[str, int],
               waiting: Callable[[], None] | None = None, record: RequestRecord | None = None) -> Iterator[str]:
        words = re.findall(r"\s*\S+", self.answer(text))
        limit = int(body.get("max_tokens", 16))
        _wait_for(self, waiting)
        try:
            for word in words[:limit]:
                time.sleep(self.seconds_per_token)
                yield word
        finally:
            self.gen_lock.release()
        n = min(len(words), limit)
        usage.update(prompt_tokens=self.prompt_tokens(text), completion_tokens=n,
                     total_tokens=self.prompt_tokens(text) + n, finish=int(len(words) <= limit))


class ExactBackend:
    """Deterministic answers with no model: `answer(prompt)` gives each whole answer, the same on every
    request (an engine whose outputs never change with batches); streamed in pieces of four characters."""

    def __init__(self, answer: Callable[[str], str]):
        self.answer = answer

    def prompt_tokens(self, text: str) -> int:
        return max(1, len(text.split()))

    def prompt_of(self, body: dict[str, Any], chat: bool) -> str:
        return _joined(body, chat, "\n")

    def stream(self, text: str, body: dict[str, Any], usage: dict[str, int],
               waiting: Callable[[], None] | None = None, record: RequestRecord | None = None) -> Iterator[str]:
        out = self.answer(text)
        pieces = [out[i:i + 4] for i in range(0, len(out), 4)] or [""]
        yield from pieces
        usage.update(prompt_tokens=self.prompt_tokens(text), completion_tokens=len(pieces),
                     total_tokens=self.prompt_tokens(text) + len(pieces), finish=1)


class TimedBackend:
    """`tok0 tok1 ...`, `max_tokens` of them (finish_reason "length"), the first `timing.ttft_ms` after the
    request arrived and one every `gap_ms`; each piece is due at an absolute deadline (arrival + TTFT + the
    intended gaps so far), so lateness never accumulates. Never queued: every request streams at once."""

    def __init__(self, timing: Timing):
        self.timing = timing

    def prompt_tokens(self, text: str) -> int:
        return len(text.split())

    def prompt_of(self, body: dict[str, Any], chat: bool) -> str:
        return _last_user(body, chat)

    def stream(self, text: str, body: dict[str, Any], usage: dict[str, int],
               waiting: Callable[[], None] | None = None, record: RequestRecord | None = None) -> Iterator[str]:
        assert record is not None
        tokens = max(1, int(body.get("max_tokens", 16)))
        record.slow, record.ttft, record.gaps = self.timing.plan(record.index, tokens)
        deadline = record.arrived + record.ttft
        for k in range(tokens):
            if k:
                deadline += record.gaps[k - 1]
            # a thread's timed sleep wakes tens of microseconds late (an event loop's epoll wait: whole milliseconds)
            if (wait := deadline - time.perf_counter()) > 0:
                time.sleep(wait)
            yield f" tok{k}"
        usage.update(prompt_tokens=self.prompt_tokens(text), completion_tokens=tokens,
                     total_tokens=self.prompt_tokens(text) + tokens, finish=0)


def _last_user(body: dict[str, Any], chat: bool) -> str:
    if not chat:
        return str(body.get("prompt", ""))
    return next((str(m.get("content", "")) for m in reversed(body.get("messages") or []) if m.get("role") == "user"),
                "")


# -- exact answers to known items (the CLI's served runs) ----------------------------------------------------

SERVED = "smollm2-135m"  # the served name; the local tokenizer of the same name sizes the prompts


def items_of(packs: list[dict[str, Any]]) -> list[Item]:
    """The items a config with these `tasks` asks (the openai runner builds them the same way)."""
    from evalrun.evals import api

    out: list[Item] = []
    for task in packs:
        params = {k: v for k, v in task.items() if k != "pack"}
        out.extend(api.export_pack(task["pack"], params, model=SERVED))
    return out


def _golds_text(item: Item, golds: dict[str, Any]) -> str:
    if item.answer_format == "json":
        return json.dumps(golds)
    return "\n".join(f"{g}" if len(golds) == 1 else f"{n}: {g}" for n, g in golds.items() if g is not None) or "none"


def exact_answer(item: Item) -> str:
    return _golds_text(item, {f.name: f.gold for f in item.fields})


def wrong_answer(item: Item) -> str:
    """Every digit of every gold changed: a lost amount, number or date on every field."""
    shift = str.maketrans("0123456789", "1234567890")
    return _golds_text(item, {f.name: (f.gold.translate(shift) if f.gold else f.gold) for f in item.fields})


def gold_answers(items: list[Item], wrong: Callable[[Item], bool] = lambda _it: False) -> Callable[[str], str]:
    """An `ExactBackend`'s answers: every item it knows (by its chat prompt) answered with its gold values,
    so a baseline is right on every field and whatever a candidate loses is the candidate's (`wrong`
    decides which answers are altered); a prompt of no item: "I do not know"."""
    by_prompt = {"\n".join([it.system, it.prompt] if it.system else [it.prompt]): it for it in items}

    def answer(prompt: str) -> str:
        item = by_prompt.get(prompt)
        return "I do not know." if item is None else (wrong_answer if wrong(item) else exact_answer)(item)

    return answer


def served_config(path: Path, name: str, base_url: str, tasks: list[dict[str, Any]],
                  gate: dict[str, Any] | None = None) -> Path:
    """A config of the `openai` runner against the test server."""
    import yaml

    data: dict[str, Any] = {
        "name": name, "runner": "openai", "model": SERVED,
        "openai": {"base_url": base_url, "concurrency": 2, "timeout": 30, "max_retries": 1},
        "generation": {"max_new_tokens": 16, "temperature": 0},
        "tasks": tasks,
    }
    if gate is not None:
        data["gate"] = gate
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


# -- the HTTP server ----------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each SSE chunk goes out when written
    server: "_Server"
    record: RequestRecord  # the generation request being answered
    arrived: float = 0.0

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def parse_request(self) -> bool:
        self.arrived = time.perf_counter()  # the request line is in; its headers and body follow at once
        return super().parse_request()

    # -- plumbing ---------------------------------------------------------------------------------------

    def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._json(status, {"error": {"message": message, "type": "test_fault", "code": status}}, headers)

    def _chunk(self, payload: str) -> None:
        data = f"data: {payload}\n\n".encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _comment(self, text: str) -> None:
        data = f": {text}\n\n".encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _unauthorised(self) -> None:
        message = "invalid API key"
        got = self.headers.get("Authorization") or ""
        if self.server.state.echo_key and got:
            import base64
            from urllib.parse import quote

            key = got.removeprefix("Bearer ")
            basic = base64.b64encode(("user:" + key).encode()).decode()
            message += (f"; got {got!r}; as a query: api_key={quote(key, safe='')}; as Basic: {basic}; "
                        f"{base64.b64encode(key.encode()).decode()}")
        self._error(401, message)

    def _authorised(self) -> bool:
        key = self.server.state.api_key
        return key is None or self.headers.get("Authorization") == f"Bearer {key}"

    # -- endpoints --------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        state = self.server.state
        if self.path == "/metrics":
            with state.lock:
                state.metrics_gets += 1
            if state.metrics is None:
                self._error(404, "no route /metrics")
                return
            data = state.metrics.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif self.path != "/v1/models" or not state.list_models:
            self._error(404, f"no route {self.path}")
        elif not self._authorised():
            self._unauthorised()
        else:
            self._json(200, {"object": "list", "data": [{"id": state.model_name, "object": "model",
                                                           "created": int(time.time()), "owned_by": "evalrun-tests",
                                                           "root": "HuggingFaceTB/SmolLM2-135M-Instruct"}
                                                          | ({"max_model_len": state.context_length or 8192}
                                                             if state.report_context else {})]})

    def do_POST(self) -> None:
        state = self.server.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        chat = self.path == "/v1/chat/completions"
        if not chat and self.path != "/v1/completions":
            self._error(404, f"no route {self.path}")
            return
        key = hashlib.sha256(json.dumps(body.get("messages") or body.get("prompt")).encode()).hexdigest()[:16]
        with state.lock:
            fault = state.faults.pop(0) if state.faults else None
            answered = sum(1 for r in state.records if r.status == 200)
            if fault is None and state.revoke_after is not None and answered >= state.revoke_after:
                fault = "401"
            record = RequestRecord(self.path, key, self.arrived, fault, index=len(state.records),
                                   prompt=_last_user(body, chat))
            state.records.append(record)
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        self.record = record
        try:
            record.status = self._answer(body, chat, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout): nothing more to say
            record.status = 599
        finally:
            record.finished = time.perf_counter()
            with state.lock:
                state.in_flight -= 1

    def _answer(self, body: dict[str, Any], chat: bool, fault: str | None) -> int:
        state = self.server.state
        if not self._authorised() or fault == "401":
            self._unauthorised()
            return 401
        if body.get("model") != state.model_name:
            self._error(404, f"model {body.get('model')!r} does not exist")
            return 404
        if fault == "abort":
            return self._abort(body, chat)
        if fault in ("500", "503", "400"):
            self._error(int(fault), "injected fault")
            return int(fault)
        if fault == "429":
            self._error(429, "rate limited", {"Retry-After": str(state.retry_after)})
            return 429
        if fault == "slow":
            # past the client's timeout: by the time an answer could start, the client has gone
            time.sleep(state.slow_seconds)
            self.close_connection = True
            return 599
        backend: Any = self.server.backend
        text = backend.prompt_of(body, chat)
        if state.context_length is not None:
            asked = backend.prompt_tokens(text) + int(body.get("max_tokens", 16))
            if asked > state.context_length:
                return self._too_long(backend.prompt_tokens(text), asked, bool(body.get("stream")))
        usage: dict[str, int] = {}
        ident = f"cmpl-{time.monotonic_ns()}"
        model = state.model_name
        if not (body.get("stream") and state.stream_supported):
            out = "".join(backend.stream(text, body, usage, record=self.record))
            finish = "stop" if usage.pop("finish") else "length"
            choice = ({"index": 0, "message": {"role": "assistant", "content": out}, "finish_reason": finish} if chat
                      else {"index": 0, "text": out, "finish_reason": finish})
            if not chat and body.get("prompt_logprobs") and state.prompt_logprobs is not None:
                choice["prompt_logprobs"] = state.prompt_logprobs(body)
            self._json(200, {"id": ident, "object": "chat.completion" if chat else "text_completion", "model": model,
                             "choices": [choice], "usage": usage})
            return 200
        self._start_stream()
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(piece: str | None, finish: str | None = None) -> str:
            choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
            if chat:
                choice["delta"] = {"content": piece} if piece is not None else {}
            else:
                choice["text"] = piece or ""
            return json.dumps({"id": ident, "object": obj, "model": model, "choices": [choice]})

        if chat:  # as vLLM: the role first, no text yet
            self._chunk(json.dumps({"id": ident, "object": obj, "model": model,
                                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                 "finish_reason": None}]}))
        # queued behind other requests: SSE comments keep the connection visibly alive, as busy servers do
        pieces = backend.stream(text, body, usage, waiting=lambda: self._comment("queued"), record=self.record)
        for piece in pieces:
            if state.interrupt_requests and backend.queued:
                # llama-cpp-python: after each chunk, a request waiting for the model ends this stream
                # with [DONE]: no finish_reason, no usage
                pieces.close()
                self._chunk("[DONE]")
                self._end_stream()
                self.record.interrupted = True
                return 200
            self._chunk(chunk(piece))
            self.record.sent.append(time.perf_counter())
            if fault == "drop" and len(self.record.sent) == 1:
                # the connection dies mid-answer: no end of the chunked body, no [DONE]
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                pieces.close()
                return 598
        finish = "stop" if usage.pop("finish") else "length"
        self._chunk(chunk(None, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._chunk(json.dumps({"id": ident, "object": obj, "model": model, "choices": [], "usage": usage}))
        self._chunk("[DONE]")
        self._end_stream()
        self.record.done = time.perf_counter()
        return 200

    def _abort(self, body: dict[str, Any], chat: bool) -> int:
        """An answer the engine dropped: no text, finish_reason "abort" (vLLM's and SGLang's word)."""
        model, ident = self.server.state.model_name, f"cmpl-{time.monotonic_ns()}"
        if not (body.get("stream") and self.server.state.stream_supported):
            choice = ({"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "abort"} if chat
                      else {"index": 0, "text": "", "finish_reason": "abort"})
            self._json(200, {"id": ident, "object": "chat.completion" if chat else "text_completion", "model": model,
                             "choices": [choice], "usage": {"prompt_tokens": 1, "completion_tokens": 0}})
            return 200
        self._start_stream()
        delta = {"delta": {"content": ""}} if chat else {"text": ""}
        choice = {"index": 0, "finish_reason": "abort"} | delta
        self._chunk(json.dumps({"id": ident, "model": model, "choices": [choice]}))
        self._chunk("[DONE]")
        self._end_stream()
        return 200

    def _too_long(self, prompt: int, asked: int, stream: bool) -> int:
        """The served context refuses the request: vLLM's (and OpenAI's) 400, or llama-cpp-python's
        streamed answer, whose error is raised after the 200 went out: an empty stream."""
        state = self.server.state
        if state.context_refusal == "empty" and stream:
            self._start_stream()
            self._end_stream()
            return 200
        message = (f"This model's maximum context length is {state.context_length} tokens. However, you requested "
                   f"{asked} tokens ({prompt} in the messages, {asked - prompt} in the completion). Please reduce "
                   "the length of the messages or completion.")
        self._json(400, {"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                                   "code": "context_length_exceeded"}})
        return 400


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # a burst of 32 and more connections at once waits in the listen backlog
    state: ServerState
    backend: Any  # one of the backends above

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (its timeout, a test's dropped stream) is expected here, not a traceback."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class OpenAITestServer:
    """Start with `with OpenAITestServer(backend, state) as srv:`; `srv.base_url` ends in /v1, `srv.root`
    is the server's root (where /metrics is). `backend` None: a server that answers only /metrics and
    /v1/models (a generation request is a 500)."""

    def __init__(self, backend: Any = None, state: ServerState | None = None):
        self.state = state or ServerState()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.state = self.state
        self._httpd.backend = backend
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def __enter__(self) -> "OpenAITestServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@contextmanager
def timed_server(timing: Timing | None = None, model_name: str = "smollm2-135m",
                 process: bool = True) -> Iterator[tuple[str, ServerState]]:
    """The server with a `TimedBackend`; yields (base_url ending in /v1, state).

    With `process` (the default) the server lives in a child process, as a real server would: in the
    client's own process it shares the client's GIL, so the runner's work (parsing 32 streams, starting
    requests) holds back the server's reads and sends by milliseconds and the ground truth bends with
    the very load being measured. perf_counter is the system's monotonic clock, so the child's
    timestamps compare with the parent's; `state` fetches them when read, also after the server stopped."""
    timing = timing or Timing()
    if not process:
        with OpenAITestServer(TimedBackend(timing), ServerState(model_name=model_name)) as srv:
            yield srv.base_url, srv.state
        return
    child = subprocess.Popen([sys.executable, "-m", "tests.fakes.openai_server", json.dumps(asdict(timing)),
                              model_name], cwd=_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    state: ServerState | None = None
    try:
        base_url = child.stdout.readline().strip()
        if not base_url.startswith("http://"):
            raise RuntimeError(f"the timed server did not start (it said {base_url!r})")
        state = ServerState(model_name=model_name, remote=_Remote(child))
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


def _child_main(argv: list[str]) -> None:
    """`python -m tests.fakes.openai_server TIMING_JSON MODEL`: print the base URL, answer each
    `state` line on stdin with the records as one JSON line, stop at the end of stdin."""
    with OpenAITestServer(TimedBackend(Timing(**json.loads(argv[0]))), ServerState(model_name=argv[1])) as srv:
        print(srv.base_url, flush=True)
        for line in sys.stdin:
            if line.strip() == "state":
                with srv.state.lock:
                    dump = {"records": [asdict(r) for r in srv.state.records],
                            "max_in_flight": srv.state.max_in_flight}
                print(json.dumps(dump), flush=True)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
