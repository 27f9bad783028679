"""Reading a run store is a light import: a viewer, an importer or a script that lists runs
must not pay for (or break on) the gate, the scorer, an HTTP client or scipy."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["evalrun.evals.gate", "evalrun.evals.scoring", "evalrun.evals.stats", "evalrun.evals.compare", "evalrun.evals.config",
         "evalrun.values", "evalrun.runners.openai", "httpx", "scipy", "torch", "rapidfuzz"]


def test_importing_the_run_store_loads_no_gate_scorer_http_client_or_scipy() -> None:
    code = ("import json, sys; import evalrun.evals.store; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('evalrun') or m in %r)))" % (HEAVY,))
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    assert not [m for m in HEAVY if m in loaded], loaded
    assert len([m for m in loaded if m.startswith("evalrun")]) <= 20, loaded
