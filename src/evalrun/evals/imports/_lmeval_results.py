"""lm-eval's `results_<time>.json` beside the sample logs: what ran (model arguments,
versions, task versions and hashes) and lm-eval's own aggregate figures, which the
manifest keeps so a report can set the paired verdict beside them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol

from evalrun.contract.types import Generation
from evalrun.contract.version import __version__
from evalrun.evals.files import ConfigError
from evalrun.evals.imports._run import file_sha256

# what says which model ran, compared across the results files of one import
_IDENTITY = ("model", "model_args", "model_dtype", "model_sha", "model_revision")


class _Doc(Protocol):
    task: str


@dataclass
class Results:
    """The results files of one import, merged (they must describe one model)."""

    files: list[Path] = field(default_factory=list)
    data: list[dict[str, Any]] = field(default_factory=list)

    def first(self) -> dict[str, Any]:
        return self.data[0] if self.data else {}

    def per_task(self, key: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for d in self.data:
            value = d.get(key)
            if isinstance(value, dict):
                out |= value
        return out

    def check_counts(self, files: list[tuple[Path, str, str]], docs: Iterable[_Doc]) -> None:
        """A sample log holding fewer docs than its results file says were evaluated was cut short."""
        n_samples = self.per_task("n-samples")
        held: dict[str, int] = {}
        for d in docs:
            held[d.task] = held.get(d.task, 0) + 1
        for path, task, _ in files:
            effective = (n_samples.get(task) or {}).get("effective") if isinstance(n_samples.get(task), dict) else None
            if isinstance(effective, int) and held.get(task) != effective:
                raise ConfigError(f"holds {held.get(task, 0)} docs of task {task!r}, but its results file says "
                                  f"{effective} were evaluated: a truncated log, or files of two runs", file=path)

    def facts(self, tasks: list[str], gens: list[Generation]) -> dict[str, Any]:
        """The manifest's model, config, versions and packs, from what lm-eval recorded."""
        first = self.first()
        raw = first.get("config")
        config: dict[str, Any] = raw if isinstance(raw, dict) else {}
        args = config.get("model_args")
        args_map = args if isinstance(args, dict) else _parse_args(args)
        versions, n_shot, hashes = self.per_task("versions"), self.per_task("n-shot"), self.per_task("task_hashes")
        gen_kwargs = {t: c.get("generation_kwargs") for t, c in self.per_task("configs").items() if isinstance(c, dict)}
        model_name = first.get("model_name") or args_map.get("pretrained")
        dtype = args_map.get("dtype") or config.get("model_dtype")
        return {
            "model": {"spec": model_name, "kind": "lm-eval", "location": args_map.get("pretrained"),
                      "identity": {k: config.get(k) for k in _IDENTITY if config.get(k) not in (None, "")}},
            "config": {"model": model_name, "runner": f"lm-eval {config.get('model') or ''}".strip(),
                       "acceleration": {}, "generation": config.get("gen_kwargs") or None},
            "runner": "lm-eval",
            "device": config.get("device"),
            "dtype": str(dtype) if dtype is not None else None,
            "versions": {"lm_eval": first.get("lm_eval_version"), "transformers": first.get("transformers_version"),
                         "evalrun": __version__},
            "packs": [{"pack": t, "version": versions.get(t),
                       "params": {k: v for k, v in (("num_fewshot", n_shot.get(t)), ("task_hash", hashes.get(t)),
                                                    ("generation_kwargs", gen_kwargs.get(t))) if v is not None}}
                      for t in tasks],
        }

    def source_section(self) -> dict[str, Any]:
        """lm-eval's own per-task figures (accuracy and stderr per metric and filter) and its files."""
        return {"results_files": [{"path": str(p), "sha256": file_sha256(p)} for p in self.files],
                "source_results": self.per_task("results")}


def _parse_args(text: Any) -> dict[str, Any]:
    """lm-eval's `key=value,key=value` model arguments (older results files keep the string)."""
    if not isinstance(text, str):
        return {}
    out: dict[str, Any] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def read_results(files: list[tuple[Path, str, str]]) -> Results:
    """The results file of each sample log's timestamp, where there is one; several must agree on the model."""
    out = Results()
    for path, _, stamp in files:
        result = path.with_name(f"results_{stamp}.json")
        if not result.is_file() or result in out.files:
            continue
        try:
            data = json.loads(result.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"not a readable lm-eval results file ({exc})", file=result) from None
        if not isinstance(data, dict) or not isinstance(data.get("config", {}), dict):
            raise ConfigError("not an lm-eval results file (no config object)", file=result)
        if out.data:
            mine = {k: (data.get("config") or {}).get(k) for k in _IDENTITY}
            theirs = {k: (out.first().get("config") or {}).get(k) for k in _IDENTITY}
            if mine != theirs:
                raise ConfigError(f"describes another model than {out.files[0]} ({mine} vs {theirs}): import each "
                                  "run on its own", file=result)
        out.files.append(result)
        out.data.append(data)
    return out
