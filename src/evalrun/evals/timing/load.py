"""How busy the machine was while a run was timed, read from /proc at a session's start and end (no sampling
thread), and whether its speedups can be trusted (docs/speed.md, 'Speed you can trust by default'). A busy
window is not vouched for, however it was timed: interleaving cancels a load that changes between pairs, not
the noise a loaded machine adds to each. The load average counts this run's own threads: recorded, not judged.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from evalrun.contract.manifest import MachineLoad
from evalrun.evals.timing.latency import STORED_RUNS

QUIET_OTHERS = 0.10  # share of the machine's CPUs other processes may use while a run is timed
QUIET_STEAL = 0.05
PROC_STAT = Path("/proc/stat")
PROC_LOADAVG = Path("/proc/loadavg")
ADVICE = {  # what to do about a warning, by how the speedups were timed
    "sequential": "re-time them side by side with --timing interleaved (or `timing: interleaved` in the candidate's "
                  "config)",
    "interleaved": "compare again on a quiet machine (a re-timing stored from a busy one is timed again)",
}


@dataclass(frozen=True)
class Snapshot:
    """The machine's CPU counters (seconds, summed over CPUs) and this process's CPU time at one moment."""

    wall: float
    total: float
    busy: float
    steal: float
    own: float
    loadavg: tuple[float, float, float] | None


def _cpu_line(stat: Path) -> list[int] | None:
    try:
        with stat.open(encoding="ascii") as f:
            head = f.readline().split()
    except OSError:
        return None
    if not head or head[0] != "cpu" or len(head) < 5:
        return None
    return [int(x) for x in head[1:9]]  # user nice system idle iowait irq softirq steal (guest is inside user)


def _loadavg(path: Path) -> tuple[float, float, float] | None:
    try:
        one, five, fifteen = path.read_text(encoding="ascii").split()[:3]
        return float(one), float(five), float(fifteen)
    except (OSError, ValueError):
        return None


def snapshot(stat: Path = PROC_STAT, loadavg: Path = PROC_LOADAVG) -> Snapshot | None:
    """The counters now; None where /proc/stat cannot be read (not Linux)."""
    fields = _cpu_line(stat)
    if fields is None:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    fields += [0] * (8 - len(fields))
    idle = fields[3] + fields[4]
    t = os.times()
    return Snapshot(wall=time.monotonic(), total=sum(fields) / tick, busy=(sum(fields) - idle) / tick,
                    steal=fields[7] / tick, own=t.user + t.system + t.children_user + t.children_system,
                    loadavg=_loadavg(loadavg))


def measured(start: Snapshot | None, end: Snapshot | None) -> dict[str, Any] | None:
    """What the machine did between two snapshots, as a session records it; None when unmeasured."""
    if start is None or end is None or end.total <= start.total:
        return None
    total = end.total - start.total
    busy, own = end.busy - start.busy, end.own - start.own
    return {"cpus": os.cpu_count(), "seconds": round(end.wall - start.wall, 3),
            "others_share": round(min(max(busy - own, 0.0) / total, 1.0), 4),
            "steal_share": round(max(end.steal - start.steal, 0.0) / total, 4),
            "own_share": round(min(own / total, 1.0), 4),
            "loadavg_start": list(start.loadavg) if start.loadavg else None,
            "loadavg_end": list(end.loadavg) if end.loadavg else None}


@dataclass(frozen=True)
class RunLoad:
    """The busiest of a run's generating sessions (`None` figures: some session did not record its load)."""

    others_share: float | None
    steal_share: float | None
    loadavg: tuple[float, float] | None  # 1-minute load average at the start and the end of that session
    where: str | None = None  # why the load cannot be measured here ("a remote server", "Ray actors")


def busiest(records: Sequence[MachineLoad | None]) -> MachineLoad | None:
    """By other processes plus steal; None when there are none or one's load was not recorded."""
    known = [r for r in records if r is not None]
    if not records or len(known) < len(records):
        return None
    return max(known, key=lambda r: (r.others_share or 0.0) + (r.steal_share or 0.0))


def window_load(record: MachineLoad | None) -> RunLoad:
    """One timed window's load as judged here (a session's, or an interleaved re-timing's)."""
    if record is None:
        return RunLoad(None, None, None)
    avg = (record.loadavg_start[0], record.loadavg_end[0]) if record.loadavg_start and record.loadavg_end else None
    return RunLoad(record.others_share, record.steal_share, avg)


def run_load(manifest: Any) -> RunLoad:
    """A run's load from its manifest's sessions (those that generated items, whose timings it keeps)."""
    if manifest.device == "remote":
        return RunLoad(None, None, None, "a server whose machine evalrun does not measure")
    if (manifest.to_dict().get("config") or {}).get("executor") == "ray":
        return RunLoad(None, None, None, "Ray actors, outside the process whose load is measured")
    return window_load(busiest([s.machine for s in manifest.sessions if s.generated]))


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _load_text(name: str, load: RunLoad) -> str:
    text = f"{_pct(load.others_share or 0.0)} during {name}"
    extra = []
    if (load.steal_share or 0.0) >= 0.005:
        extra.append(f"steal {_pct(load.steal_share or 0.0)}")
    if load.loadavg:
        extra.append(f"load average {load.loadavg[0]:.1f} -> {load.loadavg[1]:.1f}")
    return text + (f" ({', '.join(extra)})" if extra else "")


def busy(load: RunLoad) -> bool:
    return (load.others_share or 0.0) >= QUIET_OTHERS or (load.steal_share or 0.0) >= QUIET_STEAL


def timings_warning(runs: Sequence[tuple[str, RunLoad]], label: str = "sequential") -> str | None:
    """Why speedups timed in these windows (name, load), `label` timings, follow the machine; None when
    every window recorded a quiet machine."""
    where = [f"{name} ran on {load.where}" for name, load in runs if load.where]
    if where:
        return (f"{label} timings, load not measured ({'; '.join(where)}): the ratios may follow that machine's "
                f"load as much as the candidate; {ADVICE[label]}")
    unrecorded = [name for name, load in runs if load.others_share is None]
    if unrecorded:
        return (f"{label} timings, and the machine's load was not recorded for {' and '.join(unrecorded)}, "
                f"stored before evalrun measured it or timed without /proc to read: the ratios may follow the load; "
                f"{ADVICE[label]}")
    if not any(busy(load) for _, load in runs):
        return None
    times = [_load_text(name, load) for name, load in runs]
    times[0] = times[0].replace(" during ", " of the CPU time during ", 1)
    return (f"{label} timings on a busy machine: other processes took {' and '.join(times)}, where quiet is "
            f"under {_pct(QUIET_OTHERS)}: the ratios follow the machine's load, not only the candidate; "
            f"{ADVICE[label]}")


def quiet_text(runs: Sequence[tuple[str, RunLoad]]) -> str:
    """What made sequential timings trustworthy: the most other processes used in any of the runs."""
    most = max((load.others_share or 0.0) for _, load in runs)
    return f"sequential timings on a quiet machine (other processes used at most {_pct(most)} of the CPUs)"


@dataclass(frozen=True)
class Timing:
    """How a candidate's speedups were timed, in the words every output shows beside them."""

    label: str  # "interleaved" or "sequential"
    warning: str | None  # why the figures follow the machine
    note: str  # one sentence for the reader
    vouched: bool = True  # False: a window measured a busy machine, so no speed rule stands on these timings


def timing(base: Any, cand: Any, basis: str) -> Timing:
    """Judge the speedups of `cand` over `base` (RunResults) timed on `basis` (evals.timing.latency.pair_timings)."""
    if basis != STORED_RUNS:
        inter = getattr(cand, "interleaved", None)
        where = run_load(cand.manifest).where or run_load(base.manifest).where  # a server's work is not this process's
        load = RunLoad(None, None, None, where) if where else window_load(getattr(inter, "machine", None))
        cancels = ("so a load that changes between pairs cancels" if getattr(inter, "batches", 0) > 1 else
                   "but one pair cannot cancel a load that changed between its two sides")
        note = f"speedups from {basis}: both sides were timed back to back in one process, the order alternating"
        warning = timings_warning([("the interleaved re-timing", load)], "interleaved")
        return Timing("interleaved", warning, f"WARNING: {note}; but {warning}" if warning else f"{note}, {cancels}",
                      not busy(load))
    runs = [(base.name, run_load(base.manifest)), (cand.name, run_load(cand.manifest))]
    warning = timings_warning(runs)
    return Timing("sequential", warning, f"WARNING: speedups from {warning}" if warning else
                  f"speedups from {quiet_text(runs)}", not any(busy(load) for _, load in runs))
