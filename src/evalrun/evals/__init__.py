"""Analysis and orchestration: config, the run store, scoring, pairing, statistics, the gate and its verdict.

Sub-packages, each importing only those before it (tests/test_architecture.py ORDER): files -> store ->
stats -> scoring -> compare -> timing -> gate -> config -> results -> speed -> drift -> imports -> run;
`api` and `frames` on top are the public face."""
