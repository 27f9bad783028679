"""What every renderer shares: untrusted text made safe, one way numbers read, drift figures as text, the console
commands print with, and where a report file may go."""

from __future__ import annotations

from evalrun.reports.text._safe_text import SafeConsole, output_problem, safe_text, safe_tree
from evalrun.reports.text.units import rule_text, seconds

__all__ = ["SafeConsole", "output_problem", "rule_text", "safe_text", "safe_tree", "seconds"]
