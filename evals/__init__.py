"""Analysis and orchestration: config, the run store, scoring, pairing, statistics, the gate and its verdict."""
