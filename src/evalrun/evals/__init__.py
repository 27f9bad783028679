"""Analysis and orchestration: config, the run store, scoring, pairing, statistics, the gate and its verdict.
Each sub-package imports only those before it (tests/test_architecture.py ORDER); `api` and `frames` on top
are the public face."""
