"""Renderers of what evals computed; no computation lives here. Sub-packages import only those before
them: text -> charts -> view -> formats -> sweep (tests/test_architecture.py ORDER)."""
