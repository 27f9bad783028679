"""Backends behind one Runner interface: hf (in process), openai (a served engine), ray (hf on Ray actors);
accelerations in accel/ (eviction policies in accel/evict/).

Sub-packages and modules, each importing only those before it (tests/test_architecture.py ORDER):
_quiet_gc -> logprobs -> batch_plan -> models -> accel -> base -> hf -> openai -> ray -> config_rules."""
