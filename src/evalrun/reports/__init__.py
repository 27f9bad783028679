"""Renderers of what evals computed; no computation lives here.

Sub-packages, each importing only those before it (tests/test_architecture.py ORDER):
text -> charts -> view -> formats -> sweep."""
