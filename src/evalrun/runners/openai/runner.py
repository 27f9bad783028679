"""The `openai` runner: any OpenAI-compatible server (vLLM, SGLang, llama.cpp server).

It gates the engine teams deploy (accelerations as engine flags), not a re-implementation of it. Requests are
streamed with bounded concurrency and each finished item goes to `emit` as it arrives, so a run that stops
keeps every answer it got; which failures stop the run and which are one item's error: docs/served-engines.md,
'Failures and retries'. The API key lives only in this process's request headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator

from evalrun.contract.generation import GenerationSettings
from evalrun.contract.types import Generation, Item
from evalrun.runners.base import Runner, RunRequest, frozen_heap, messages, render_chat
from evalrun.runners.models import ModelSource, load_tokenizer, say
from evalrun.runners.openai._answer import Answer, read_json, read_stream
from evalrun.runners.openai._engine_timings import EngineTimings
from evalrun.runners.openai._evidence import evidence, from_log, read_engine
from evalrun.runners.openai._http import ItemFailed, ServerClient, ServerError, json_object, run_sync
from evalrun.runners.openai._forced import ServedForcing
from evalrun.runners.openai._logprobs import ServedDists
from evalrun.runners.openai._settings import EngineInfo, OpenAISettings, api_key_from_env
from evalrun.runners.openai._server_process import ServerProcess


class OpenAIRunner(Runner):
    """Generates answers for Items by calling an OpenAI-compatible server."""

    reads_forced = True  # through vLLM's prompt_logprobs (runners/openai/_forced.py)

    def __init__(
        self,
        settings: OpenAISettings,
        model: str,
        tokenizer_source: ModelSource,
        api_key: str | None = None,
        rng: random.Random | None = None,
        server: ServerProcess | None = None,
    ):
        super().__init__()  # nothing is loaded or accelerated in this process
        self.settings = settings
        self.served_model = model
        self.tokenizer_source = tokenizer_source
        self.tokenizer: Any = load_tokenizer(tokenizer_source)
        self.http = ServerClient(settings, api_key, rng)
        # what the server says it serves (its /models entry for `model`), filled by probe()
        self.server_model: dict[str, Any] | None = None
        self.models_listed: bool = False
        self.models_refused: ServerError | None = None  # GET /models answered 404/405 (`check` refuses it)
        self.streamed = 0
        self.not_streamed = 0
        self.response_models: set[str] = set()
        self.max_in_flight = 0
        self._in_flight = 0
        self.item_errors = 0  # items stored as errors: refused as too long, or answers that stayed cut
        # the engine evalrun launches for this run (`server:`), up only while `run` needs it
        self.server = server
        self.engine_props: dict[str, Any] | None = None  # llama.cpp's GET /props, when the server has it
        self.engine_said: list[tuple[str, dict[str, Any]]] = []  # what the engine says it runs (_evidence.py)
        self.dists = ServedDists(self.tokenizer)  # each answer's top-k logprobs, when the server returns them
        self.forcing = ServedForcing()  # teacher forcing: reading another run's answers (runners/openai/_forced.py)
        self.engine_timings = EngineTimings()  # the engine's own clock, where it reports one

    # -- the runner interface -------------------------------------------------------------------------

    def render(self, item: Item) -> str:
        """The prompt text: sent as is to `completions`; for `chat` the server renders the same template."""
        return render_chat(self.tokenizer, item)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def max_context(self) -> int | None:
        """None to the packs: items are built the same whatever the server's context (one that does not
        fit is refused per item: `served_context`)."""
        return None

    def served_context(self) -> tuple[int, str] | None:
        """The served context in tokens and where it was learnt (the config's, else /models'); None: unknown."""
        if self.settings.max_model_len:
            return self.settings.max_model_len, "openai.max_model_len"
        for reported, where in (((self.server_model or {}).get("max_model_len"), "max_model_len from GET /models"),
                                ((self.engine_props or {}).get("n_ctx"), "n_ctx from llama.cpp's GET /props")):
            if isinstance(reported, int) and not isinstance(reported, bool) and reported > 0:
                return reported, where
        return None

    def clock(self) -> str:
        return ("client time.perf_counter: TTFT from the request's send (its last bytes written) to its first "
                "streamed text chunk, ITL between chunks" if self.settings.stream else "client time.perf_counter of whole answers "
                "(not streamed: no TTFT, TPOT or ITL)")

    def run(self, request: RunRequest, emit: Callable[[Generation], None]) -> None:
        """Send every item (at most `concurrency` at once) and emit each answer as it arrives; in teacher
        forcing (`forced`), read those answers instead and hand each record to `on_forced` (emits nothing)."""
        if request.items:
            self.dists.top_k, self.dists.on_distribution = request.top_k, request.on_distribution
            with self.serving(), frozen_heap():
                run_sync(self.forcing.read_all(self, request) if request.forced is not None
                         else self._run_window(request, emit))

    async def _run_window(self, request: RunRequest, emit: Callable[[Generation], None]) -> None:
        """`_run_all` with the engine's /metrics scraped before and after (also when a failure stops it: the
        answers stored before it were timed too; not after Ctrl-C, which stops at once)."""
        before, answered = await self.engine_timings.scrape(self.root()), self.streamed + self.not_streamed
        try:
            await self._run_all(request, emit)
        except Exception:
            await self.engine_timings.window_end(self.root(), before, self.streamed + self.not_streamed - answered)
            raise
        await self.engine_timings.window_end(self.root(), before, self.streamed + self.not_streamed - answered)

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """The launched server up for the block (a URL-only config: nothing to do), however many `run`s it
        holds; a fresh launch is probed again, so what it reports is what answered."""
        if self.server is None:
            yield
            return
        launches = self.server.launches
        with self.server.running(say) as base_url:
            self.settings = self.settings.model_copy(update={"base_url": base_url})
            self.http.settings = self.settings
            self.http.gone = self.server.gone
            if self.server.launches != launches or self.server_model is None:
                self.probe()
            yield
    # -- identity ---------------------------------------------------------------------------------------

    def probe(self) -> None:
        """Ask the server which models it serves, so the run records (and is keyed by) what actually answers.

        A server without a /models endpoint (404) is accepted; one that refuses the key stops here.
        llama.cpp's /props is read too (the context it serves; vLLM says it in /models), and what the engine
        says it runs (its cache, its kernel: _evidence.py)."""
        run_sync(self._probe())
        self.engine_props, self.engine_said = run_sync(read_engine(self.root()))

    def server_identity(self) -> dict[str, Any] | None:
        """The server-reported facts that tell two deployments apart (not its timestamps)."""
        if self.server_model is None:
            return None
        return {k: self.server_model[k] for k in ("id", "root") if self.server_model.get(k) is not None}

    def manifest_extras(self) -> dict[str, Any]:
        """What the run did against the server, for the manifest (never the key)."""
        launched = {} if self.server is None else {"launched": self.server.facts() | {"props": self.engine_props}}
        said = evidence(*self.engine_said, ("log", from_log(self.server.kv if self.server else {})))
        ctx = self.served_context()
        server = {"base_url": self.settings.base_url, "endpoint": self.settings.endpoint,
                  "models_endpoint": self.models_listed, "reported_model": self.server_model,
                  "response_models": sorted(self.response_models), "requests": self.http.requests,
                  "retries": dict(sorted(self.http.retries.items())), "streamed": self.streamed,
                  "not_streamed": self.not_streamed, "max_in_flight": self.max_in_flight,
                  "concurrency": self.settings.concurrency, "request_rate": self.settings.request_rate,
                  "api_key_env": self.settings.api_key_env,
                  "context": None if ctx is None else {"tokens": ctx[0], "from": ctx[1]},
                  "item_errors": self.item_errors, "logprobs": self.dists.facts(),
                  "engine_timings": self.engine_timings.facts()}
        return ({"evidence": said} if said else {}) | {"server": launched | server}

    def root(self) -> str:
        """The server's root URL (its base URL without the API path), where /props and /metrics are."""
        return (self.settings.base_url or "").rsplit(self.server.settings.api_path if self.server else "/v1", 1)[0]

    def preflight(self) -> str | None:
        """A URL whose models endpoint answered 404/405 when the run was prepared is refused here (the base
        URL usually lacks /v1), though a run accepts it and records the answers' `model`. A server evalrun
        launches is not up yet: a note, its context is read when the run starts."""
        if self.server is not None:
            return ("the server is launched at run time (server:): its context is read once it is up "
                    "(openai.max_model_len states it now)")
        if self.models_refused is not None:
            raise self.models_refused
        return None

    async def _probe(self) -> None:
        self.models_refused = None
        async with self.http.client() as client:
            try:
                listing = await self.http.with_retries(
                    lambda: self.http.send(client, "GET", "models", None, json_object, "GET /models"), "GET /models")
            except ServerError as exc:
                if exc.status in (404, 405):
                    self.models_refused = exc  # accepted: the responses' `model` fields are recorded instead
                    return
                raise
        entries = [e for e in (listing or {}).get("data") or [] if isinstance(e, dict) and "id" in e]
        self.models_listed = bool(entries)
        if not entries:
            return
        match = next((e for e in entries if e.get("id") == self.served_model), None)
        if match is None:
            served = ", ".join(repr(e["id"]) for e in entries[:10])
            raise ServerError(f"server {self.settings.base_url} does not serve model {self.served_model!r}; it serves {served}: "
                              "set `model` to one of them")
        self.server_model = {k: v for k, v in match.items() if k not in ("created", "permission")}

    def _body(self, item: Item, g: GenerationSettings) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.served_model, "max_tokens": g.max_new_tokens,
                                "temperature": g.temperature}
        # an item that fixes its own output length (speed packs) says so; `ignore_eos` is vLLM's and SGLang's name
        override = getattr(item, "generation", None)
        if override is not None:
            body["max_tokens"] = int(override.max_new_tokens)
            if getattr(override, "ignore_eos", False):
                body["ignore_eos"] = True
        body.update(self.settings.extra_body)  # never a field set above or below (OpenAISettings refuses those)
        body.update(self.dists.fields(self.settings.endpoint))
        if self.settings.endpoint == "chat":
            body["messages"] = messages(item)
        else:
            body["prompt"] = self.render(item)
        if g.sampling:
            body["top_p"] = g.top_p
            body["seed"] = g.seed
        if self.settings.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    async def _read_answer(self, item: Item, resp: Any, start: float) -> Generation:
        """Read a streamed (SSE) answer, or a whole JSON one from a server that does not stream."""
        if "text/event-stream" in resp.headers.get("content-type", ""):
            answer = await read_stream(resp.aiter_lines(), self.settings.endpoint, self.http.scrub)
            self.streamed += 1
        else:
            answer = read_json(await resp.aread(), self.settings.endpoint)
            self.not_streamed += 1
        self.response_models |= answer.models
        self.engine_timings.response(answer.timings)
        return self._generation(item, answer, start)

    def _generation(self, item: Item, answer: Answer, start: float) -> Generation:
        """TTFT from the request's send to its first text chunk, decode to its last, ITL between chunks;
        `stamps` None: an answer that was not streamed (only its whole time is known)."""
        end = time.perf_counter()
        text, stamps = answer.text, answer.stamps
        ttft = stamps[0] - start if stamps else None
        decode = stamps[-1] - stamps[0] if stamps else None
        usage = answer.usage if isinstance(answer.usage, dict) else {}
        prompt, new = usage.get("prompt_tokens"), usage.get("completion_tokens")
        prompt_tokens = int(prompt) if isinstance(prompt, int) else self.count_tokens(self.render(item))
        new_tokens = int(new) if isinstance(new, int) else self.count_tokens(text)
        return Generation(item_id=item.id, pack=item.pack, prompt_hash=item.prompt_hash, output=text,
                          prompt_tokens=prompt_tokens, new_tokens=new_tokens, seconds=round(end - start, 6),
                          batch_size=1, prefill_seconds=None if ttft is None else round(ttft, 6),
                          decode_seconds=None if decode is None else round(decode, 6),
                          started_at=round(time.time() - (end - start), 6),
                          itl_seconds=None if stamps is None else [round(b - a, 6) for a, b in zip(stamps, stamps[1:])],
                          finish_reason=answer.finish_reason, output_ids=self.dists.take(item.id, answer.tokens, text))

    def _error(self, item: Item, message: str, prompt_tokens: int = 0) -> Generation:
        """This item's answer is an error (the run goes on); the message names why, never the key."""
        self.item_errors += 1
        return Generation(item_id=item.id, pack=item.pack, prompt_hash=item.prompt_hash,
                          error=self.http.scrub(message)[:2000], prompt_tokens=prompt_tokens, batch_size=1,
                          started_at=round(time.time(), 6))

    def _too_long(self, item: Item, body: dict[str, Any]) -> Generation | None:
        """The item's error when its prompt and answer cannot fit the known served context (not sent)."""
        context = self.served_context()
        if context is None:
            return None
        prompt = self.count_tokens(self.render(item))
        if prompt + body["max_tokens"] <= context[0]:
            return None
        return self._error(item, f"prompt too long: refused before sending: the prompt is {prompt} tokens and "
                                 f"max_tokens {body['max_tokens']}, past the served context of {context[0]} tokens "
                                 f"({context[1]})", prompt)

    async def _generate(self, client: Any, item: Item, g: GenerationSettings) -> Generation:
        path = "chat/completions" if self.settings.endpoint == "chat" else "completions"
        what = f"POST /{path} (item {item.id})"
        body = self._body(item, g)
        refused = self._too_long(item, body)
        if refused is not None:
            return refused
        try:
            return await self.http.with_retries(
                lambda: self.http.send(client, "POST", path, body,
                                       lambda resp, start: self._read_answer(item, resp, start), what),
                what,
            )
        except ItemFailed as exc:
            return self._error(item, str(exc))

    def _store(self, gen: Generation, emit: Callable[[Generation], None]) -> None:
        self.dists.store(gen.item_id)  # its record first: a kill between the two leaves a record no line uses
        emit(gen)

    def arrivals(self, n: int) -> list[float]:
        """Seconds after the run's start at which each request may be sent: 0 for all without a
        `request_rate`, else a Poisson process (exponential gaps at that rate, seeded)."""
        if not self.settings.request_rate:
            return [0.0] * n
        rng = random.Random(self.settings.arrival_seed)
        out, t = [], 0.0
        for _ in range(n):
            out.append(t)
            t += rng.expovariate(self.settings.request_rate)
        return out

    async def _run_all(self, request: RunRequest, emit: Callable[[Generation], None]) -> None:
        items = request.items
        loop = asyncio.get_running_loop()
        pending = list(reversed(list(zip(items, self.arrivals(len(items))))))

        async def worker() -> None:
            while pending:
                item, at = pending.pop()
                if at > 0:
                    await asyncio.sleep(max(0.0, t0 + at - loop.time()))
                self._in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self._in_flight)
                try:
                    gen = await self._generate(client, item, request.generation)
                finally:
                    self._in_flight -= 1
                # storing an answer (a write and an fsync) runs on a thread of its own: on the event loop it
                # would stall every other stream, and the timestamps of their chunks with it
                await loop.run_in_executor(store, self._store, gen, emit)

        with ThreadPoolExecutor(1, thread_name_prefix="evalrun-store") as store:
            async with self.http.client() as client:
                t0 = loop.time()  # the arrival schedule starts once the client is ready to send
                workers = [asyncio.create_task(worker()) for _ in range(min(self.settings.concurrency, len(items)))]
                try:
                    await asyncio.gather(*workers)
                except BaseException:
                    # one item stopped the run: the others' requests are abandoned, what was emitted stays stored
                    for task in workers:
                        task.cancel()
                    await asyncio.gather(*workers, return_exceptions=True)
                    raise


__all__ = ["OpenAIRunner"]
