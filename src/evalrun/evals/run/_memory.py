"""Peak memory of one run: CUDA's max allocated bytes, or the process's peak RSS on CPU. Runs share a
process, so the peak is reset when a run starts (on Linux, writing 5 to /proc/self/clear_refs resets VmHWM);
where it cannot be, the lifetime peak is marked `scope: process` and no memory-saved claim is made from it."""

from __future__ import annotations

import resource
import sys
from pathlib import Path
from typing import Any

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def reset_peak(device: str) -> bool:
    """Start a new peak for this run; True when the next `read_peak` covers only the run."""
    if device == "cuda":
        import torch

        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
            return True
        return False
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return _vm_hwm() is not None


def _vm_hwm() -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def read_peak(device: str, reset_ok: bool) -> dict[str, Any] | None:
    """{"bytes", "kind", "scope"}: scope "run" when `reset_peak` succeeded, else "process"."""
    scope = "run" if reset_ok else "process"
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            return None
        return {"bytes": int(torch.cuda.max_memory_allocated()), "kind": "cuda_max_allocated", "scope": scope}
    hwm = _vm_hwm() if reset_ok else None
    if hwm is not None:
        return {"bytes": hwm, "kind": "process_peak_rss", "scope": "run"}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in kilobytes on Linux, bytes on macOS
    return {"bytes": int(peak if sys.platform == "darwin" else peak * 1024), "kind": "process_peak_rss",
            "scope": "process"}
