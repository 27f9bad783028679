"""The base of every evalrun exception, and the exit code each subclass carries (so the CLI maps
exceptions to codes in one function, `exit_code_of`, and every stage raises without importing the CLI)."""

from __future__ import annotations

from pathlib import Path

EXIT_PASS, EXIT_REGRESSION, EXIT_USAGE, EXIT_RUNTIME, EXIT_INCOMPLETE = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130


class EvalrunError(Exception):
    """Base of every evalrun exception; `exit_code` is what the CLI exits with when it ends a command."""

    exit_code: int = EXIT_RUNTIME


class UsageError(EvalrunError):
    """The user's input (a config, a flag, a file) cannot be used: exit 2."""

    exit_code = EXIT_USAGE


class ConfigError(UsageError):
    """A user-facing configuration problem: file, key path, what is allowed."""

    def __init__(self, message: str, file: str | Path | None = None, path: str | None = None):
        self.message = message
        self.file = str(file) if file is not None else None
        self.path = path
        super().__init__("".join(f"{part}: " for part in (self.file, path) if part) + message)


class RuntimeFailure(EvalrunError):
    """Something outside the input failed (an engine, the disk, a model): exit 3."""

    exit_code = EXIT_RUNTIME


def exit_code_of(exc: BaseException) -> int:
    """130 for an interrupt, 3 for anything but an EvalrunError (an internal error)."""
    if isinstance(exc, EvalrunError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_RUNTIME
