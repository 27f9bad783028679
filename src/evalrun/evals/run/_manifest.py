"""What a run's manifest.json says about it (the config, the model, versions, speed, sessions), built from the
prepared run and what the runner reports."""

from __future__ import annotations

import os
import platform
import socket
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from evalrun.contract.manifest import SCHEMA_VERSION, RunManifest
from evalrun.contract.version import __version__
from evalrun.evals import speed
import evalrun.evals.run._memory as memory
from evalrun.contract.types import Generation
from evalrun.runners.accel import all_methods
from evalrun.runners.openai import combine_engine_timings
from evalrun.tasks import get_pack

if TYPE_CHECKING:
    from evalrun.evals.results import PreparedRun
    from evalrun.runners.base import Runner


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def versions() -> dict[str, str]:
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "evalrun": __version__,
    }


def limit_of(stored: RunManifest | None, prepared: "PreparedRun") -> int | None:
    """The --limit the stored items are cut to after this session: a session without one stores
    the whole plan, a larger one extends the items, and a run stored in full stays full. A stored
    manifest that never recorded a limit (new, or older than schema 3) takes this session's."""
    if prepared.limit is None:
        return None
    if stored is not None and "limit" in stored.model_fields_set:
        return None if stored.limit is None else max(stored.limit, prepared.limit)
    return prepared.limit


def describe(prepared: "PreparedRun", stored: RunManifest | None = None) -> dict[str, Any]:
    """What the run is (not how it went); `stored`: the manifest it updates (for the limit)."""
    config = prepared.config
    methods = all_methods()
    return {
        "schema_version": SCHEMA_VERSION,
        "name": config.name,
        "replicate": prepared.replicate,
        **({"role": prepared.role} if prepared.role else {}),
        "key": prepared.key,
        "config_file": config.source,
        "config": config.model_dump(mode="json", exclude={"source", "tasks"}) | {"tasks": config.tasks_dump()},
        "model": {"spec": prepared.source.spec, "kind": prepared.source.kind,
                  "location": prepared.source.location, "identity": prepared.source.identity},
        "runner": config.runner,
        "device": prepared.device,
        "dtype": prepared.dtype,
        "versions": versions(),
        "packs": [
            {"pack": t.pack, "version": get_pack(t.pack).version, "params": t.params.model_dump(mode="json")}
            for t in config.tasks
        ],
        "emulated": sorted(n for n in config.accelerations() if methods[n].capabilities.emulated),
        "limit": limit_of(stored, prepared),
    }


# a served run's counters that every session adds to: a resumed run reports all its sessions' requests
_SUMMED = ("requests", "streamed", "not_streamed", "item_errors")


def runner_extras(runner: Runner, before: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a runner reports about itself beyond accelerations (a remote server's answers, retries);
    `before`: the run's `server` record from its earlier sessions, which this session's counts add to."""
    extras = runner.manifest_extras()
    server = extras.get("server")
    if not isinstance(server, dict):
        return extras
    old = before or {}
    for k in _SUMMED:
        server[k] = int(old.get(k) or 0) + int(server.get(k) or 0)
    retries: dict[str, int] = dict(old.get("retries") or {})
    for reason, n in (server.get("retries") or {}).items():
        retries[reason] = retries.get(reason, 0) + n
    server["retries"] = dict(sorted(retries.items()))
    server["max_in_flight"] = max(int(old.get("max_in_flight") or 0), int(server.get("max_in_flight") or 0))
    lp, old_lp = server.get("logprobs"), old.get("logprobs") or {}
    if isinstance(lp, dict):
        for k in ("answers_with", "answers_without"):
            lp[k] = int(old_lp.get(k) or 0) + int(lp.get(k) or 0)
        lp["first_without"] = old_lp.get("first_without") or lp.get("first_without")
    if "engine_timings" in server:  # totals that every session adds to (a relaunched engine counts from zero)
        server["engine_timings"] = combine_engine_timings(old.get("engine_timings"), server["engine_timings"])
    server["sessions"] = int(old.get("sessions") or (1 if old else 0)) + 1
    return extras


def run_speed(prepared: "PreparedRun", generations: list[Generation], runner: Runner, effects: dict[str, Any],
              peak_reset: bool) -> dict[str, Any]:
    """Speed over all the run's generations (resumed sessions included); the peak memory is this session's."""
    model_config, element_size = runner.kv_source() or (None, None)
    kv = speed.kv_cache_figures(model_config, element_size, effects, speed.longest_context(generations))
    remote = prepared.device == "remote"
    return speed.run_speed(generations, items=prepared.items, load_seconds=round(runner.load_seconds, 3),
                           peak_memory=None if remote else memory.read_peak(prepared.device, peak_reset),
                           kv_cache=kv, clock=runner.clock())


def finish_reasons(generations: list[Generation]) -> dict[str, int]:
    """Answers by the engine's finish_reason; those that recorded none (older runs, errors) are not counted."""
    counts: dict[str, int] = {}
    for g in generations:
        if g.error is None and g.finish_reason:
            counts[g.finish_reason] = counts.get(g.finish_reason, 0) + 1
    return dict(sorted(counts.items()))


def outcome(label: str, generations: list[Generation], log: Callable[[str], None]) -> dict[str, Any]:
    """The manifest's count of errors and finish reasons; logged in one line when answers are errors
    (with the first) or reached max_new_tokens, which the run's own figures would not show."""
    errors = [g for g in generations if g.error is not None]
    reasons = finish_reasons(generations)
    parts = []
    if errors:
        parts.append(f"{len(errors)} of {len(generations)} items are errors (first: {errors[0].item_id}: "
                     f"{errors[0].error})")
    if cut := reasons.get("length", 0):
        parts.append(f"{cut} answer{'s' if cut != 1 else ''} reached max_new_tokens (finish_reason length): "
                     "a cut-off can cost a field")
    if parts:
        log(f"{label}: {'; '.join(parts)}")
    return {"items_error": len(errors), "finish_reasons": reasons}


def session_entry(started: str, generated: int, errors: int, seconds: float, waited: bool,
                  status: str, machine: dict[str, Any] | None = None) -> dict[str, Any]:
    """One process's session on the run: who generated what, when (`finished` dates its timings), and
    how busy the machine was meanwhile (evals/timing/load.py; absent where it cannot be read)."""
    return {"started": started, "finished": now(), "generated": generated, "errors": errors,
            "seconds": round(seconds, 3), "pid": os.getpid(), "host": socket.gethostname(),
            "waited_for_lock": waited, "status": status} | ({"machine": machine} if machine else {})


def rebuilt(prepared: "PreparedRun", generations: list[Generation], reason: str) -> RunManifest:
    """A manifest for samples that outlived theirs: what earlier sessions did is lost, and said so."""
    return RunManifest().merged(describe(prepared) | {
        "status": "complete",
        "created": now(),
        "updated": now(),
        "items_total": len(prepared.items),
        "items_error": sum(1 for g in generations if g.error is not None),
        "finish_reasons": finish_reasons(generations),
        "speed": speed.run_speed(generations),
        "manifest_recreated": {
            "at": now(),
            "reason": reason,
            "note": "manifest recreated from the config; earlier sessions, effects and load times are unknown",
        },
    })
