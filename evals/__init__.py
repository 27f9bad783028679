"""evalrun: accuracy regression harness for lossy LLM inference acceleration."""

__version__ = "0.1.0"
