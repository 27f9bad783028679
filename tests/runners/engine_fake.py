"""A launched engine for the lifecycle tests, without a model: `python -m tests.runners.engine_fake PORT`.

It serves tests/fakes/openai_server.py's handler with the scripted backend (exact needle answers,
one word a token) on 127.0.0.1:PORT, as an engine a config's `server:` starts would: it may print a
line first (`--say`, what an engine logs while loading), take `--load` seconds before it listens, ask
for the key in the environment variable `--key-env` names, and pace its answers (`--per-token`). Like
a real engine it dies, saying so, when its port is taken. `--leave-after N`: a server that daemonizes
(a session of its own) while the process evalrun launched exits once the daemon has answered N
requests: the answers after that come from a process evalrun did not start."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from tests.fakes.openai_server import ScriptedBackend, ServerState, _Handler, _Server


class _Logged(_Handler):
    def log_message(self, format: str, *args: object) -> None:  # an access log line, as engines print them
        print(format % args, flush=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--say", default=None)
    parser.add_argument("--load", type=float, default=0.0)
    parser.add_argument("--key-env", default=None)
    parser.add_argument("--print-env", default=None)  # as an engine that logs its settings (a key) while loading
    parser.add_argument("--per-token", type=float, default=0.001)
    parser.add_argument("--leave-after", type=int, default=None)
    args = parser.parse_args(argv)
    state = ServerState(api_key=os.environ[args.key_env] if args.key_env else None)
    if args.leave_after is not None:
        done_r, done_w = os.pipe()
        if os.fork():  # the launched process: gone once the daemon has answered enough
            os.close(done_w)
            sys.exit(0 if os.read(done_r, 1) else 1)
        os.setsid()
        threading.Thread(target=_tell_when, args=(state, args.leave_after, done_w), daemon=True).start()
    if args.say:
        print(args.say, flush=True)
    if args.print_env:
        print(f"args: api_key={os.environ[args.print_env]}, port={args.port}", flush=True)
    time.sleep(args.load)
    try:
        httpd = _Server(("127.0.0.1", args.port), _Logged)
    except OSError as exc:
        print(f"ERROR: [Errno {exc.errno}] error while attempting to bind on address ('127.0.0.1', {args.port}): "
              f"{exc.strerror}", flush=True)
        sys.exit(1)
    httpd.state = state
    httpd.backend = ScriptedBackend(seconds_per_token=args.per_token)  # type: ignore[assignment]
    print(f"serving on 127.0.0.1:{args.port}", flush=True)
    httpd.serve_forever(poll_interval=0.05)


def _tell_when(state: ServerState, answers: int, fd: int) -> None:
    while len(state.completed()) < answers:
        time.sleep(0.01)
    os.write(fd, b"x")


if __name__ == "__main__":
    main(sys.argv[1:])
