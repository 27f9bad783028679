"""evalrun: accuracy regression harness for lossy LLM inference acceleration.

The public API, curated; everything else is private to its stage::

    import evalrun

    base, cand = evalrun.load_config("configs/baseline.yaml"), evalrun.load_config("configs/int4kv.yaml")
    report = evalrun.compare(base, [cand])
    report.status          # "pass" | "fail" | "incomplete"
    evalrun.score_field("amount", "EUR 14851.20", "The total is EUR 14,85.20").subcode   # "digit_dropped"

Names are imported on first use, so `import evalrun` (and any stage below it)
stays light and loads no model library until it is needed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from evalrun.contract.version import __version__

# the public names, by the module that defines them
_MODULES: dict[str, str] = {
    "evalrun.evals.api": "run compare compare_results report rescore plan calibrate CompareReport Rescored",
    "evalrun.evals.config": "load_config RunConfig",
    "evalrun.evals.files": "ConfigError",
    "evalrun.evals.results": "RunResult",
    "evalrun.evals.run": "RunFailed",
    "evalrun.evals.scoring": "score_field",
    "evalrun.evals.gate": "GateConfig Verdict RuleResult Gap",
    "evalrun.evals.compare": "Comparison",
    "evalrun.evals.frames": "samples_df fields_df",
    "evalrun.contract": "Item Field Generation FieldScore",
}
_EXPORTS: dict[str, str] = {name: module for module, names in _MODULES.items() for name in names.split()}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evalrun' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from evalrun.contract import Field, FieldScore, Generation, Item
    from evalrun.evals.api import (
        CompareReport, Rescored, calibrate, compare, compare_results, plan, report, rescore, run,
    )
    from evalrun.evals.files import ConfigError
    from evalrun.evals.config import RunConfig, load_config
    from evalrun.evals.run import RunFailed
    from evalrun.evals.results import RunResult
    from evalrun.evals.scoring import score_field
    from evalrun.evals.frames import fields_df, samples_df
    from evalrun.evals.gate import Gap, GateConfig, RuleResult, Verdict
    from evalrun.evals.compare import Comparison
