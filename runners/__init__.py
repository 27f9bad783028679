"""Backends behind one Runner interface: hf (in process), openai (a served engine); accelerations in accel/."""
