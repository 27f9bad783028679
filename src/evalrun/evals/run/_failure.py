"""A run that could not proceed as a whole (exit 3), and the record of a failed session."""

from __future__ import annotations

from evalrun.contract.errors import RuntimeFailure
from evalrun.contract.manifest import RunManifest
from evalrun.evals.results import PreparedRun
from evalrun.evals.store import RunStore
from evalrun.evals.files import StoreLink, StoreWriteFailed

__all__ = ["RunFailed", "failed_session"]


class RunFailed(RuntimeFailure):
    """The run as a whole could not proceed (exit 3)."""


def failed_session(prepared: PreparedRun, store: RunStore, manifest: RunManifest, exc: Exception, stored: int,
                    generated: int) -> Exception:
    """Record a session that failed (on a full disk too: never left `running`); what to raise for it."""
    unrecorded = "" if store.write_failed_manifest(manifest) else \
        f"; {store.manifest_path} could not be updated either: it still says `running`"
    wanted = len({it.id for it in prepared.items})
    if isinstance(exc, StoreLink):
        return exc
    if isinstance(exc, StoreWriteFailed):
        return RunFailed(f"{prepared.label}: {exc.text(f'{stored} of {wanted} items are stored')}{unrecorded}")
    kept = f" ({stored} of {wanted} items are stored; the same command resumes)" if generated else ""
    return RunFailed(f"{prepared.label}: {exc}{kept}{unrecorded}")
