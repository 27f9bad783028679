"""How a runner's rule for a config is broken: what is wrong, at which key path.

The rules are validators on the runners' settings models (runners/runner_settings.py); the config loader turns a broken
rule into a ConfigError naming the file and this key path."""

from __future__ import annotations

from evalrun.contract.validation import KeyedError


class RuleBroken(KeyedError):
    """A runner rule a config breaks: what is wrong (`message`), at which key path (`path`).
    Raised inside a pydantic validator, the path extends the error's key path (`first_error`)."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message, key=path)
        self.path = path
