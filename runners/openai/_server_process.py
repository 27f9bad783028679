"""Launching the engine a config gates, waiting for it, and never leaving it behind.

A CI job that gates an engine flag must be one command: evalrun picks a free
loopback port, starts the server in a process group of its own (so Ctrl-C in
the terminal reaches evalrun, which then stops the whole group, not a half of
it), writes the server's output to `server.log` in the run directory, waits for
its ready path with a progress line, and stops the group (SIGTERM, then SIGKILL
after the grace period) however the run ends: success, failure, an exception,
Ctrl-C or SIGTERM; at interpreter exit for anything left, and through the
kernel's parent-death signal if evalrun itself is killed.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
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
from evalrun.runners.openai._engine_log import kv_facts
from evalrun.runners.openai._server_settings import ServerSettings, filled

HOST = "127.0.0.1"
_LIVE: set["ServerProcess"] = set()  # started and not stopped: what atexit and SIGTERM stop


class ServerFailed(ModelError):
    """The server exited, or never became ready: the run stops (exit 3); nothing is stored as an answer."""


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice for port 0 on the loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when evalrun dies (Linux), so a killed evalrun leaves no server."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def last_lines(path: Path, n: int = 8) -> list[str]:
    """The log's last `n` non-empty lines (what a failure message quotes)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64_000))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return list(deque((ln.rstrip() for ln in text.splitlines() if ln.strip()), maxlen=n))


class ServerProcess:
    """One launch of a config's `server:` command; `running()` brackets its life."""

    def __init__(self, settings: ServerSettings, config_file: str, values: dict[str, str],
                 env: dict[str, str] | None = None):
        self.settings = settings
        self.config_file = config_file
        self.values = dict(values)  # placeholders other than port/host
        self.env = env
        self.log_path: Path | None = None  # set once the run directory is known
        self.keep = False  # --keep-servers: left up for debugging (stopped by nobody)
        self.on_kept: Callable[[str, int], None] | None = None  # told the URL and group of a server left up
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.ready_seconds: float | None = None
        self.launches = 0
        self.kv: dict[str, Any] = {}  # the cache the engine says it built (runners/openai/_engine_log.py)

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
        tail = last_lines(self.log_path) if self.log_path else []
        shown = " | ".join(tail) if tail else "(the log is empty)"
        return f"{self.config_file}: server: {what}; last lines of {self.log_path}: {shown}"

    # -- the life of the process ------------------------------------------------------------------------

    @contextlib.contextmanager
    def running(self, say: Callable[[str | None], None]) -> Iterator[str]:
        """The server up and ready for the block (its base URL); stopped after it, however it ends, unless kept.
        A server already up (kept from an earlier call) is used as it is."""
        if self.proc is not None and self.proc.poll() is None:
            yield self.base_url
            return
        with _sigterm_raises():  # from the launch on: a SIGTERM while it loads stops it too
            self.start(say)
            try:
                yield self.base_url
            finally:
                if not self.keep:
                    self.stop()
                elif self.on_kept is not None and self.proc is not None:
                    self.on_kept(self.base_url, self.proc.pid)

    def start(self, say: Callable[[str | None], None]) -> None:
        """Launch and wait until ready (ServerFailed naming the config and the log's last lines otherwise)."""
        s = self.settings
        self.port = free_port() if s.port == "auto" else int(s.port)
        argv = self.command(self.port)
        assert self.log_path is not None, "the run directory sets log_path before the server starts"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(self.env if self.env is not None else os.environ) | s.env
        with self.log_path.open("ab") as log:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            log.write(f"=== evalrun {stamp}: starting {' '.join(argv)}\n".encode())
            log.flush()
            held: list[int] = []  # a Ctrl-C or SIGTERM inside Popen() would lose the pid: held until it is ours
            try:
                with _handling(lambda signum, _frame: held.append(signum), signal.SIGINT, signal.SIGTERM):
                    self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                                 preexec_fn=None if self.keep else _die_with_parent)
            except OSError as exc:
                self.proc = None
                _deliver(held)  # nothing to own: the interrupt still ends the run
                raise ServerFailed(f"{self.config_file}: server: cannot start {argv[0]!r}: {exc.strerror or exc} "
                                   "(for the example engines: make engines-llamacpp)") from None
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
        import httpx

        s, started = self.settings, time.monotonic()
        url = f"http://{HOST}:{self.port}{s.ready}"
        next_note = 0.0
        assert self.proc is not None
        with httpx.Client(timeout=5.0) as client:
            while True:
                elapsed = time.monotonic() - started
                if self.proc.poll() is not None:
                    raise ServerFailed(self._failure(f"the server exited with code {self.proc.returncode} before it "
                                                     f"was ready ({elapsed:.0f} s after launch)"))
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(url).status_code == 200:
                        self.ready_seconds = round(time.monotonic() - started, 2)
                        self.kv = self._logged_kv()
                        return
                if elapsed >= s.startup_timeout:
                    raise ServerFailed(self._failure(f"not ready after {s.startup_timeout:g} s (startup_timeout): "
                                                     f"GET {s.ready} never answered 200"))
                if elapsed >= next_note:
                    tail = last_lines(self.log_path, 1) if self.log_path else []
                    say(f"starting server on port {self.port}: {elapsed:.0f} s of {s.startup_timeout:g} s"
                        + (f"; log: {tail[0][-120:]}" if tail else ""))
                    next_note = elapsed + 5.0
                time.sleep(0.2)

    def _logged_kv(self) -> dict[str, Any]:
        """The cache facts of this launch's log (the lines after its own start marker)."""
        try:
            text = self.log_path.read_bytes().decode("utf-8", errors="replace") if self.log_path else ""
        except OSError:
            return {}
        return kv_facts(text.rsplit("=== evalrun ", 1)[-1] if "=== evalrun " in text else text)

    def stop(self) -> None:
        """SIGTERM to the group, SIGKILL to whatever is left after the grace period; idempotent."""
        proc, self.proc = self.proc, None
        _LIVE.discard(self)
        if proc is None:
            return
        pgid = proc.pid  # start_new_session: the leader's pid is the group's id
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        try:
            proc.wait(timeout=self.settings.grace)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)  # members that outlived the leader, or a leader that ignored SIGTERM
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if self.log_path is not None:
            with contextlib.suppress(OSError), self.log_path.open("ab") as log:
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


__all__ = ["HOST", "ServerFailed", "ServerProcess", "free_port", "last_lines"]
