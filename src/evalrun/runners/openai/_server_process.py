"""Launching the engine a config gates, waiting for it, and never leaving it behind (docs/served-engines.md).

A fixed port something already answers on is refused: the answers must come from the process evalrun
launched. The server runs under _supervisor.py in a session of its own, its output in `server.log` (opened
never through a link), and its group is stopped however the run ends ('Nothing outlives evalrun').
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterator

from evalrun.runners.models import ModelError
from evalrun.runners.openai._api_key import scrub_known
from evalrun.runners.openai._evidence import kv_facts
from evalrun.runners.openai._http import key_hint
from evalrun.runners.openai._settings import ServerSettings, filled

HOST = "127.0.0.1"
_LIVE: set["ServerProcess"] = set()  # started and not stopped: what atexit and SIGTERM stop
_SUPERVISOR = str(Path(__file__).with_name("_supervisor.py"))
# opens a file of the run directory (flags as os.open's), refusing a link: the run store's opener
Opener = Callable[[Path, int], int]


class ServerFailed(ModelError):
    """The server exited, or never became ready: the run stops (exit 3); nothing is stored as an answer."""


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice for port 0 on the loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _answers(port: int) -> bool:
    """Whether something accepts connections on the loopback port (a server already listening there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((HOST, port)) == 0


class ServerProcess:
    """One launch of a config's `server:` command; `running()` brackets its life."""

    def __init__(self, settings: ServerSettings, config_file: str, values: dict[str, str],
                 env: dict[str, str] | None = None, api_key: str | None = None, api_key_env: str | None = None):
        self.settings = settings
        self.config_file = config_file
        self.values = dict(values)  # placeholders other than port/host
        self.env = env
        self.api_key, self.api_key_env = api_key, api_key_env  # the readiness poll asks as the requests do
        self.log_path: Path | None = None  # set with its opener (`log_to`) once the run directory is known
        self._open: Opener | None = None
        self.keep = False  # --keep-servers: left up for debugging (stopped by nobody)
        self.on_kept: Callable[[str, int], None] | None = None  # told the URL and group of a server left up
        self.proc: subprocess.Popen[bytes] | None = None
        self._lifeline: int | None = None  # the pipe's write end: closed (by us, or by our death) stops the server
        self.port: int | None = None
        self.ready_seconds: float | None = None
        self.launches = 0
        self.kv: dict[str, Any] = {}  # the cache the engine says it built (kv_facts)

    def log_to(self, path: Path, opener: Opener) -> None:
        """Where the engine's output goes, and how that file is opened (the run store's way: never a link)."""
        self.log_path, self._open = path, opener

    # -- what the rest of the run sees -----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}{self.settings.api_path}"

    def command(self, port: int | str = "{port}") -> list[str]:
        return filled(self.settings.command, self.values | {"port": str(port), "host": HOST})

    def facts(self) -> dict[str, Any]:
        """For the manifest: how it was launched and how long it took to be ready."""
        return {"command": self.command(), "env": sorted(self.settings.env), "ready": self.settings.ready,
                "ready_seconds": self.ready_seconds, "launches": self.launches, "log": str(self.log_path),
                "pid": self.proc.pid if self.proc else None, "port": self.port, "kept": self.keep, "kv": self.kv}

    def gone(self) -> str | None:
        """Why the server can no longer answer (it exited), with its log's last lines; None while it runs."""
        if self.proc is None or self.proc.poll() is None:
            return None
        return self._failure(f"the server exited with code {self.proc.returncode} during the run")

    def _failure(self, what: str) -> str:
        tail = self._tail(8)
        shown = " | ".join(tail) if tail else "(the log is empty)"
        return f"{self.config_file}: server: {what}; last lines of {self.log_path}: {shown}"

    def _log_text(self, last: int = 64_000) -> str:
        """The log's last `last` bytes (a link or an unreadable file: nothing)."""
        if self.log_path is None or self._open is None:
            return ""
        try:
            with os.fdopen(self._open(self.log_path, os.O_RDONLY), "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - last))
                return fh.read().decode("utf-8", errors="replace")
        except Exception:  # unreadable, or the opener's refusal (a link): nothing to quote
            return ""

    def _tail(self, n: int) -> list[str]:
        """The log's last `n` non-empty lines, as a message may quote them: any key this process holds removed
        (an engine may print its own while loading)."""
        lines = (scrub_known(ln.rstrip()) for ln in self._log_text().splitlines() if ln.strip())
        return list(deque(lines, maxlen=n))

    # -- the life of the process ------------------------------------------------------------------------

    @contextlib.contextmanager
    def running(self, say: Callable[[str | None], None]) -> Iterator[str]:
        """The server up and ready for the block (its base URL); stopped after it, however it ends, unless kept.
        A server already up (kept from an earlier call) is used as it is. A server that exited before the
        block ended answered none of its last requests: that is the run's failure, not a finished run."""
        if self.proc is not None and self.proc.poll() is None:
            yield self.base_url
            return
        with _sigterm_raises():  # from the launch on: a SIGTERM while it loads stops it too
            self.start(say)
            try:
                yield self.base_url
                if why := self.gone():
                    raise ServerFailed(why)
            finally:
                if not self.keep or self.gone():
                    self.stop()
                elif self.on_kept is not None and self.proc is not None:
                    self.on_kept(self.base_url, self.proc.pid)

    def start(self, say: Callable[[str | None], None]) -> None:
        """Launch and wait until ready (ServerFailed naming the config and the log's last lines otherwise)."""
        s = self.settings
        self.port = free_port() if s.port == "auto" else int(s.port)
        if s.port != "auto" and _answers(self.port):
            raise ServerFailed(f"{self.config_file}: server.port: {HOST}:{self.port} already answers connections (a "
                               "server left up with --keep-servers, another job?): a launched run is answered only by "
                               "the process evalrun starts; stop what listens there, or use port: auto")
        argv = self.command(self.port)
        assert self.log_path is not None and self._open is not None, "the run directory sets the log before a start"
        env = dict(self.env if self.env is not None else os.environ) | s.env
        with os.fdopen(self._open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as log:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            log.write(f"=== evalrun {stamp}: starting {' '.join(argv)}\n".encode())
            log.flush()
            # kept: the server itself leads the group it is told to stop; otherwise the supervisor does, holding
            # the pipe whose end (our close, or our death) makes it stop the server's group
            lifeline = None if self.keep else os.pipe()
            launch = argv if lifeline is None else [sys.executable, "-I", _SUPERVISOR, str(lifeline[0]),
                                                    repr(s.grace), *argv]
            held: list[int] = []  # a Ctrl-C or SIGTERM inside Popen() would lose the pid: held until it is ours
            try:
                with _handling(lambda signum, _frame: held.append(signum), signal.SIGINT, signal.SIGTERM):
                    self.proc = subprocess.Popen(launch, stdout=log, stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                                 pass_fds=lifeline[:1] if lifeline else ())
            except OSError as exc:
                self.proc = None
                if lifeline is not None:
                    os.close(lifeline[1])
                _deliver(held)  # nothing to own: the interrupt still ends the run
                raise ServerFailed(f"{self.config_file}: server: cannot start {argv[0]!r}: {exc.strerror or exc} "
                                   "(for the example engines: make engines-llamacpp)") from None
            finally:
                if lifeline is not None:
                    os.close(lifeline[0])
            self._lifeline = lifeline[1] if lifeline else None
        self.launches += 1
        _LIVE.add(self)
        try:
            _deliver(held)  # a Ctrl-C or SIGTERM that came during the spawn, now that the pid is ours to stop
            self._wait_ready(say)
        except BaseException:
            self.stop()
            raise
        finally:
            say(None)

    def _wait_ready(self, say: Callable[[str | None], None]) -> None:
        """Poll the ready path (with the key) until it answers 200 while the launched process lives; a refused
        key at once (it would refuse every poll until the timeout)."""
        import httpx

        s, started = self.settings, time.monotonic()
        url = f"http://{HOST}:{self.port}{s.ready}"
        next_note, last = 0.0, "nothing answered"
        assert self.proc is not None
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        with httpx.Client(timeout=5.0, headers=headers) as client:
            while True:
                elapsed = time.monotonic() - started
                if self.proc.poll() is not None:
                    raise ServerFailed(self._failure(f"the server exited with code {self.proc.returncode} before it "
                                                     f"was ready ({elapsed:.0f} s after launch)"))
                with contextlib.suppress(httpx.HTTPError):
                    answer = client.get(url)
                    last = f"last answer {answer.status_code} {answer.reason_phrase}"
                    if answer.status_code in (401, 403):
                        raise ServerFailed(f"{self.config_file}: openai.api_key_env: the server answered {answer.status_code} "
                                           f"{answer.reason_phrase} to GET {s.ready} while starting: "
                                           + key_hint(answer.status_code, self.api_key_env))
                    if answer.status_code == 200 and self.proc.poll() is None:  # the answer was the launch's
                        self.ready_seconds = round(time.monotonic() - started, 2)
                        self.kv = kv_facts(self._log_text(1 << 22).rsplit("=== evalrun ", 1)[-1])  # this launch's
                        return
                if elapsed >= s.startup_timeout:
                    raise ServerFailed(self._failure(f"not ready after {s.startup_timeout:g} s (startup_timeout): "
                                                     f"GET {s.ready} never answered 200 ({last})"))
                if elapsed >= next_note:
                    tail = self._tail(1)
                    say(f"starting server on port {self.port}: {elapsed:.0f} s of {s.startup_timeout:g} s"
                        + (f"; log: {tail[0][-120:]}" if tail else ""))
                    next_note = elapsed + 5.0
                time.sleep(0.2)

    def stop(self) -> None:
        """The group stopped: SIGTERM, SIGKILL to whatever is left after the grace period (the supervisor does
        both once its pipe is closed; a kept server's own group is signalled directly); idempotent."""
        proc, self.proc = self.proc, None
        lifeline, self._lifeline = self._lifeline, None
        _LIVE.discard(self)
        if lifeline is not None:
            os.close(lifeline)
        if proc is None:
            return
        pgid = proc.pid  # start_new_session: the leader's pid is the group's id
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=self.settings.grace + (5 if lifeline is not None else 0))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)  # members that outlived the leader, or a leader that ignored SIGTERM
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if self.log_path is not None and self._open is not None:
            with contextlib.suppress(Exception), \
                    os.fdopen(self._open(self.log_path, os.O_WRONLY | os.O_APPEND), "ab") as log:
                log.write(f"=== evalrun: stopped (exit {proc.returncode})\n".encode())


@contextlib.contextmanager
def _handling(handler: Callable[[int, Any], None], *signals: int) -> Iterator[None]:
    """`handler` for `signals` in the block, the previous handlers after it; main thread only (where Python
    runs handlers: elsewhere `signal.signal` raises)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _deliver(held: list[int]) -> None:
    """Each signal `_handling` held, once, to the handler it would have reached (Ctrl-C: KeyboardInterrupt)."""
    signals = list(dict.fromkeys(held))
    held.clear()
    for sig in signals:
        signal.raise_signal(sig)


def _raise_interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _sigterm_raises() -> contextlib.AbstractContextManager[None]:
    """While a server is up, SIGTERM to evalrun (a CI timeout) unwinds like Ctrl-C, so `finally` stops it."""
    return _handling(_raise_interrupt, signal.SIGTERM)


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        if not server.keep:
            server.stop()
