"""The `openai` runner's HTTP side: one attempt at a request, retries with backoff, the refusals that stop a
run and those that concern one item only, with the API key scrubbed from every message in every form
(runners/openai/_api_key.py); and llama.cpp's GET /props.

Servers under load answer 429 or 5xx and say when to come back (`Retry-After`); a dropped connection or a
timeout is worth another try too. 400, 401, 404, ... fail the same way again, so they are not retried.
Waits grow exponentially with jitter so that many clients backing off together do not return in lockstep."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from email.utils import parsedate_to_datetime
from typing import Any, Awaitable, Callable, Coroutine, TypeVar

from evalrun.contract.errors import RuntimeFailure
from evalrun.runners.openai._api_key import readable_variable, scrub
from evalrun.runners.models import ModelError
from evalrun.runners.openai._settings import OpenAISettings

T = TypeVar("T")

# the longest Retry-After honoured; a server asking for more is treated as asking for this
MAX_RETRY_AFTER = 300.0


def retryable_status(code: int) -> bool:
    """429 (rate limited), 408 (request timeout) and every 5xx are transient."""
    return code in (408, 429) or code >= 500


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header asks for: a number of seconds or an HTTP date; None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def backoff_seconds(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Wait before retry number `attempt` (0 = first retry): base * 2**attempt capped, the upper half jittered."""
    span = min(cap, base * (2 ** min(attempt, 32)))
    return span / 2 + (rng or random).uniform(0, span / 2)


def retry_wait(attempt: int, base: float, cap: float, retry_after: float | None,
               rng: random.Random | None = None) -> float:
    """The backoff, but never shorter than what the server asked for."""
    wait = backoff_seconds(attempt, base, cap, rng)
    return max(wait, retry_after) if retry_after is not None else wait


# httpcore's trace event just before a request's last bytes (its body) are written: nothing
# between it and the socket write yields to the event loop (HTTP/1.1, as this client speaks)
_SENT = "send_request_body.started"


class ServerError(ModelError):
    """The server refused the work, or kept failing after every retry: the run stops (exit 3)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class Transient(RuntimeFailure):
    """A failure worth retrying, with the wait the server asked for, if any. `item_only`: it concerns
    this item's answer (cut short), not the server, so once retries are spent the item is an error
    and the run goes on; `max_retries` caps the retries below the settings' (None: theirs)."""

    def __init__(self, reason: str, retry_after: float | None = None, item_only: bool = False,
                 max_retries: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.item_only = item_only
        self.max_retries = max_retries


class ItemFailed(RuntimeFailure):
    """This item cannot be answered (its prompt is past the served context, its answer kept being cut):
    stored as the item's error, and the run goes on."""


# how servers say a prompt is past their context: OpenAI and vLLM (context_length_exceeded, "maximum context
# length"), llama.cpp (exceed_context_size_error), llama-cpp-python ("exceed context window"), SGLang ("longer
# than the model's context length"), TGI ("must be <= N"), and the words most others use
_TOO_LONG = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|context (?:length|window|size)"
    r"|n_ctx|too many tokens|prompt is too long|input is too long|max_model_len|max_new_tokens`? must be <= \d+",
    re.IGNORECASE,
)


def context_refusal(code: int, body: str) -> bool:
    """Whether an error answer says the prompt does not fit the served context (retrying cannot help)."""
    return code in (400, 413, 422) and _TOO_LONG.search(body) is not None


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code, also when an event loop is already running
    (a notebook): then it runs on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


_HINTS = {
    400: "the server rejected the request (a prompt longer than the served context, or a setting it does not take)",
    401: "the server did not accept the API key",
    403: "the API key is not allowed to do this",
    404: "check openai.base_url (it usually ends in /v1) and that `model` is the name the server serves",
    422: "the server rejected the request body",
}


def key_hint(code: int, api_key_env: str | None) -> str:
    """What a 401 or 403 means, and where the key came from (the variable by name, never the key)."""
    hint = _HINTS[code]
    if not api_key_env:
        return hint + "; set openai.api_key_env to the environment variable that holds the key"
    return hint + (f" (read from ${api_key_env})" if readable_variable(api_key_env)
                   else " (read from openai.api_key_env's variable)")


class ServerClient:
    """Requests to one server: the connection settings, the key, and what the requests met."""

    def __init__(self, settings: OpenAISettings, api_key: str | None, rng: random.Random | None = None):
        self.settings = settings
        self._api_key = api_key or None
        self._rng = rng or random.Random()
        self.requests = 0
        self.retries: Counter[str] = Counter()
        # a launched server's check: why it can no longer answer (it exited), so a retry does not wait for it
        self.gone: Callable[[], str | None] | None = None

    def client(self) -> Any:
        import httpx

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        limits = httpx.Limits(max_connections=self.settings.concurrency,
                              max_keepalive_connections=self.settings.concurrency)
        return httpx.AsyncClient(base_url=f"{self.settings.base_url}/", headers=headers,
                                 timeout=httpx.Timeout(self.settings.timeout), limits=limits)

    def scrub(self, text: str) -> str:
        """A server that echoes the key in an error body (raw, quoted, URL- or base64-encoded) must not
        put it into our messages or files."""
        return scrub(text, [self._api_key]) if self._api_key else text

    def refusal(self, code: int, phrase: str, what: str, body: str) -> ServerError | ItemFailed:
        """The error for an answer that retrying cannot change: this item's (a prompt past the served
        context) or the run's (a refused key, a wrong URL, a setting the server does not take)."""
        detail = re.sub(r"\s+", " ", body).strip()[:400]
        said = f"; server said: {detail}" if detail else ""
        if what.startswith("POST") and context_refusal(code, body):  # an answer's request, not the probe
            return ItemFailed(self.scrub(f"prompt too long: the server answered {code} {phrase}: the prompt does not "
                                         f"fit its context (not retried){said}"))
        hint = key_hint(code, self.settings.api_key_env) if code in (401, 403) else _HINTS.get(code, "retrying would not help")
        return ServerError(self.scrub(
            f"server {self.settings.base_url} answered {code} {phrase} to {what}: {hint}{said}"
        ), status=code)

    async def with_retries(self, attempt_once: Callable[[], Awaitable[T]], what: str) -> T:
        """One request, again after each transient failure, waiting as the server asks or backing off."""
        s = self.settings
        attempt = 0
        while True:
            try:
                return await attempt_once()
            except Transient as exc:
                if attempt >= (s.max_retries if exc.max_retries is None else min(s.max_retries, exc.max_retries)):
                    if exc.item_only:
                        tries = f"{attempt + 1} attempt{'s' if attempt else ''}"
                        raise ItemFailed(self.scrub(f"{exc.reason} ({tries})")) from None
                    raise ServerError(self.scrub(
                        f"server {s.base_url}: {what} still failing after {attempt + 1} attempts: {exc.reason}"
                    )) from None
                why = self.gone() if self.gone is not None else None
                if why:
                    raise ServerError(self.scrub(f"{what}: {exc.reason}: {why}")) from None
                self.retries[exc.reason.split(":")[0]] += 1
                await asyncio.sleep(retry_wait(attempt, s.backoff, s.max_backoff, exc.retry_after, self._rng))
                attempt += 1

    def _launch_alive(self, what: str) -> None:
        """An answer that arrives once the launched server has exited came from some other process (one on its
        port, a daemon it left behind): it stops the run and is never returned, so never stored."""
        why = self.gone() if self.gone is not None else None
        if why:
            raise ServerError(self.scrub(f"{what}: answered after the launched server had exited (not stored): {why}"))

    async def send(self, client: Any, method: str, path: str, body: dict[str, Any] | None,
                    read: Callable[[Any, float], Awaitable[T]], what: str) -> T:
        """One attempt: transient failures become Transient, refusals ServerError, a good answer `read`'s
        result; `read` gets the perf_counter at which the request was sent."""
        import httpx

        self.requests += 1
        start = time.perf_counter()
        # the request counts as sent when its last bytes go out: the time httpx spends building it,
        # waiting for a pooled connection or opening one, and this event loop spends on other
        # streams before the write, is the client's, not the server's (at 32 streams, 10-60 ms)
        on_wire: list[float] = []

        async def trace(event: str, _info: Any) -> None:
            if not on_wire and event.endswith(_SENT):
                on_wire.append(time.perf_counter())

        try:
            async with client.stream(method, path, json=body, extensions={"trace": trace}) as resp:
                if not 200 <= resp.status_code < 300:
                    text = self.scrub((await resp.aread()).decode("utf-8", errors="replace"))
                    self._launch_alive(what)
                    if retryable_status(resp.status_code):
                        raise Transient(f"HTTP {resp.status_code}", retry_after_seconds(resp.headers.get("retry-after")))
                    raise self.refusal(resp.status_code, resp.reason_phrase, what, text)
                answer = await read(resp, on_wire[0] if on_wire else start)
                self._launch_alive(what)
                return answer
        except httpx.TimeoutException as exc:
            raise Transient(f"timeout: no answer within {self.settings.timeout:g} s ({type(exc).__name__})") from None
        except (httpx.TransportError, httpx.DecodingError) as exc:
            raise Transient(f"connection: {type(exc).__name__}: {self.scrub(str(exc))}") from None


async def json_object(resp: Any, _start: float) -> dict[str, Any] | None:
    """A response body that is a JSON object (a listing), else None: a reader for ServerClient.send."""
    try:
        data = json.loads(await resp.aread())
        return data if isinstance(data, dict) else None
    except ValueError:
        return None
