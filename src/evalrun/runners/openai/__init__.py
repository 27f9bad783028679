"""The `openai` runner: any OpenAI-compatible server, with its settings, HTTP client, streamed answers, retries,
API keys, and the engine process a config's `server:` launches. The runner itself is `runner`."""

from __future__ import annotations

from evalrun.runners.openai._api_key import (
    key_forms, key_problem, readable_variable, scrub, scrub_known, variable_words,
)
from evalrun.runners.openai._answer import sse_data
from evalrun.runners.openai._settings import (
    EngineInfo, KeyUnusable, OpenAIRunnerSettings, OpenAISettings, ServerSettings, VersionUnknown, api_key_from_env,
    engine_version, placeholders_in,
)
from evalrun.runners.openai._http import (
    ServerError, backoff_seconds, context_refusal, retry_after_seconds, retry_wait, run_sync,
)
from evalrun.runners.openai._evidence import evidence, evidence_text, from_log, kv_facts, stored_evidence
from evalrun.runners.openai._server_process import ServerProcess
from evalrun.runners.openai._engine_timings import EngineTimings, combine as combine_engine_timings

__all__ = ["EngineInfo", "EngineTimings", "KeyUnusable", "OpenAIRunnerSettings", "OpenAISettings", "ServerError",
           "ServerProcess", "ServerSettings", "VersionUnknown", "api_key_from_env", "backoff_seconds",
           "combine_engine_timings", "context_refusal", "engine_version", "evidence", "evidence_text", "from_log",
           "key_forms", "key_problem", "kv_facts", "placeholders_in", "readable_variable", "retry_after_seconds",
           "retry_wait", "run_sync", "scrub", "scrub_known", "sse_data", "stored_evidence", "variable_words"]
