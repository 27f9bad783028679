"""The API key never reaches a message: a key that no header can carry (a trailing newline,
whitespace, control or non-ASCII characters) is exit 2 naming the variable, not the key;
a key pasted where the config wants a URL or a variable name is refused without being
repeated; a server that echoes the key (raw, quoted, URL- or base64-encoded) has every
form scrubbed from what evalrun prints and stores."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from typer.testing import CliRunner

from evalrun.cli import app
from evalrun.runners.openai import key_forms, key_problem, readable_variable, scrub
from tests.fakes.openai_server import OpenAITestServer, ScriptedBackend, ServerState

KEY = "sk-live-7Hq2+/x9Zr41abcDEF"
ENV = "EVALRUN_SECRET_TEST_KEY"


def _config(base_url: str, **openai: Any) -> dict[str, Any]:
    return {"name": "keyed", "runner": "openai", "model": "smollm2-135m",
            "openai": {"base_url": base_url, "api_key_env": ENV, "backoff": 0.02, "max_retries": 1, **openai},
            "generation": {"max_new_tokens": 8},
            "tasks": [{"pack": "needle_numbers", "lengths": [96], "depths": [0.0, 1.0], "values": ["integer"]}]}


def _run(tmp_path: Path, cfg: dict[str, Any], key: str) -> Any:
    f = tmp_path / "keyed.yaml"
    f.write_text(json.dumps(cfg))
    return CliRunner().invoke(app, ["run", str(f), "--out", str(tmp_path / "runs")], env={ENV: key, "COLUMNS": "200"})


def _forms(key: str) -> list[str]:
    """What a leak looks like: the key raw, repr'd, URL-encoded, base64 alone and inside Basic credentials."""
    core = key.strip()
    return [core, repr(key)[1:-1], quote(core, safe=""), quote_plus(core), base64.b64encode(core.encode()).decode(),
            base64.b64encode(f"user:{core}".encode()).decode()[8:-4]]


def _assert_no_key(text: str, key: str) -> None:
    for form in _forms(key):
        assert form not in text, f"the key leaked as {form!r}:\n{text}"


@pytest.fixture(scope="module")
def scripted(smol_dir: str) -> ScriptedBackend:
    return ScriptedBackend(seconds_per_token=0.0)


def test_every_form_of_the_key_is_scrubbed() -> None:
    text = " | ".join(_forms(KEY) + [json.dumps(KEY), repr(KEY.encode()), "Bearer " + KEY,
                                     base64.urlsafe_b64encode(("x:" + KEY).encode()).decode()])
    clean = scrub(text, [KEY])
    _assert_no_key(clean, KEY)
    assert "7Hq2" not in clean and "Bearer ***" in clean
    assert scrub("nothing here", [KEY]) == "nothing here"
    assert all(len(f) >= 8 for f in key_forms(KEY)), "no short fragment that would mask ordinary text"


@pytest.mark.parametrize("key, words", [
    (KEY + "\n", "line break at its end"),
    (KEY + "\r\n", "line break"),
    (" " + KEY, "whitespace at its start"),
    (KEY[:5] + "\t" + KEY[5:], "whitespace at character 6"),
    (KEY + "\x1b[31m", "control character"),
    (KEY + "é", "non-ASCII"),
])
def test_a_key_no_header_can_carry_is_exit_2_naming_the_variable(scripted: ScriptedBackend, tmp_path: Path,
                                                                  key: str, words: str) -> None:
    state = ServerState(api_key=KEY)
    with OpenAITestServer(scripted, state) as srv:
        res = _run(tmp_path, _config(srv.base_url), key)
    assert res.exit_code == 2, res.stdout + res.stderr
    message = " ".join(res.stderr.split())
    assert f"openai.api_key_env: the API key in environment variable {ENV} cannot be sent" in message, message
    assert words in message and "Traceback" not in message
    _assert_no_key(res.stdout + res.stderr, key)
    assert not state.records, "nothing was sent"


@pytest.mark.parametrize("openai, where", [
    ({"base_url": "http://127.0.0.1:9/v1?api_key=" + KEY}, "openai.base_url: must not have a query"),
    ({"base_url": f"http://user:{KEY}@127.0.0.1:9/v1"}, "openai.base_url: must not carry credentials"),
    ({"base_url": KEY}, "openai.base_url: must be an http(s) URL"),
    ({"api_key_env": KEY}, "openai.api_key_env: must be the NAME"),
    ({"api_key_env": "sk_live_7Hq2x9Zr41abcDEF"}, "names (its name is not shown"),
])
def test_a_key_pasted_into_the_config_is_refused_without_repeating_it(tmp_path: Path, openai: dict[str, Any],
                                                                      where: str) -> None:
    pasted = openai.get("api_key_env") or KEY
    cfg = _config("http://127.0.0.1:9/v1")
    cfg["openai"] |= openai
    res = _run(tmp_path, cfg, "unused")
    assert res.exit_code == 2, res.stdout + res.stderr
    assert where in " ".join(res.stderr.split()), res.stderr
    _assert_no_key(res.stdout + res.stderr, pasted)


def test_variable_names_are_quoted_only_when_they_read_as_names() -> None:
    for name in ("VLLM_API_KEY", "OPENAI_API_KEY", "HF_TOKEN", "my_key", ENV):
        assert readable_variable(name), name
    for name in ("sk_live_7Hq2x9Zr41abcDEF", "AKIAIOSFODNN7EXAMPLE", "a" * 32, "deadbeef0123456789abcdef"):
        assert not readable_variable(name), name
    assert key_problem(KEY) is None and key_problem("") == "it is empty"


def test_a_server_echoing_the_key_has_every_form_scrubbed(scripted: ScriptedBackend, tmp_path: Path) -> None:
    """A 401 that quotes the Authorization header raw, repr'd, URL-encoded and base64-encoded."""
    state = ServerState(api_key="sk-the-right-one", echo_key=True)
    with OpenAITestServer(scripted, state) as srv:
        res = _run(tmp_path, _config(srv.base_url), KEY)
    assert res.exit_code == 3 and "401" in res.stderr, res.stdout + res.stderr
    assert "***" in res.stderr
    _assert_no_key(res.stdout + res.stderr, KEY)
    for f in (p for p in (tmp_path / "runs").rglob("*") if p.is_file()):
        _assert_no_key(f.read_text(errors="replace"), KEY)
