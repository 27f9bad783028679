"""Backends behind one Runner interface: hf (in process), openai (a served engine), ray (hf on Ray actors);
accelerations in accel/ (eviction policies in accel/evict/).

Sub-packages and modules, each importing only those before it (tests/test_architecture.py ORDER):
config_rules -> logprobs -> batch_plan -> models -> accel -> base -> hf -> openai -> ray -> runner_settings.
Each `Runner.run` receives one `RunRequest` (runners/base.py)."""
