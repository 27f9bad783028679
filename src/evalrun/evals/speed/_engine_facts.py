"""What a served run's engine is, and the flags that make a candidate differ from its baseline.

A served candidate's acceleration is not in `acceleration:` (the engine applies it): it is the
flags its server was started with that the baseline's was not (`--type_k 2 --flash_attn true`),
so that is its label wherever a method's label shows, with the engine and its version.
"""

from __future__ import annotations

from typing import Any


def _launch(manifest: dict[str, Any]) -> dict[str, Any]:
    return ((manifest.get("model") or {}).get("identity") or {}).get("server_launch") or {}


def engine_name(manifest: dict[str, Any]) -> str:
    """The engine and its version: the launch's version, else the config's `engine:`."""
    engine = (manifest.get("config") or {}).get("engine") or {}
    declared = " ".join(str(v) for v in (engine.get("name"), engine.get("version")) if v)
    return str(_launch(manifest).get("version") or declared or "served engine")


def flags(manifest: dict[str, Any]) -> dict[str, str]:
    """The server's command (or the declared `engine.args`) as flag -> value, with what every request
    sends (`openai.extra_body`) as body.KEY; a word that is no flag's value is keyed by its position."""
    config = manifest.get("config") or {}
    words = [str(w) for w in _launch(manifest).get("command") or (config.get("engine") or {}).get("args") or []]
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and len(word) > 1:
            takes = i + 1 < len(words) and not words[i + 1].startswith("--")
            out[word] = words[i + 1] if takes else ""
            i += 2 if takes else 1
        else:
            out[f"#{i}"] = word
            i += 1
    for key, value in sorted(((config.get("openai") or {}).get("extra_body") or {}).items()):
        out[f"body.{key}"] = str(value)
    return out


def flag_changes(baseline: dict[str, Any], candidate: dict[str, Any]) -> list[str]:
    """The candidate's flags that the baseline lacks or sets otherwise, then the baseline's it drops."""
    base, cand = flags(baseline), flags(candidate)
    changed = [f"{k} {v}".strip() if not k.startswith("#") else v for k, v in cand.items() if base.get(k) != v]
    return changed + [f"no {k}" for k in base if k not in cand and not k.startswith("#")]


def engine_label(manifest: dict[str, Any], baseline: dict[str, Any] | None = None) -> str | None:
    """"llama-cpp-python 0.3.36: --type_k 2 --type_v 2 --flash_attn true" for a served candidate, the engine
    alone for a baseline (`baseline` None); None for a run generated in process."""
    if manifest.get("runner") != "openai":
        return None
    name = engine_name(manifest)
    if baseline is None or baseline.get("key") == manifest.get("key"):
        return name
    changes = flag_changes(baseline, manifest)
    other = engine_name(baseline)
    versus = f" (baseline: {other})" if other != name else ""
    return f"{name}: {' '.join(changes) if changes else 'the baseline flags'}{versus}"


__all__ = ["engine_label", "engine_name", "flag_changes", "flags"]
