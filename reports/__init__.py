"""Renderers of what evals computed; no computation lives here."""
