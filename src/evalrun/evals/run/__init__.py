"""Turning configs into stored runs: execute (find or resume, generate, record), a comparison's runs, early stop
and confirmation of flips, load sweeps, and the plans and checks made before a run."""

from __future__ import annotations

from evalrun.evals.run._early_stop import stopped_text
from evalrun.evals.run._execute import Progress, RunFailed, check_stored_items, execute, key_payload, prepare
from evalrun.evals.run.confirm import execute_run, prepare_checked, run_candidate, run_control
from evalrun.evals.run._load_sweep import (
    LoadCurve, LoadPoint, LoadSweep, best_index, load_sweep, make_curve, point_metrics,
)
from evalrun.evals.run._pack_export import export_pack
from evalrun.evals.run._check import CheckResult, Plan, inspect_run, plan_from_run

__all__ = [
    "CheckResult", "LoadCurve", "LoadPoint", "LoadSweep", "Plan", "Progress", "RunFailed", "best_index",
    "check_stored_items", "execute", "execute_run", "export_pack", "inspect_run", "key_payload", "load_sweep",
    "make_curve", "plan_from_run", "point_metrics", "prepare", "prepare_checked", "run_candidate", "run_control", "stopped_text",
]
