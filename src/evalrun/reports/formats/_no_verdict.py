"""The report written where there is no verdict, in each output's format: a "running" one replaces an
earlier run's report once the outputs are checked (CI publishing with `if: always()` would show the old
PASS), and a failed run writes why. Each is a failure to what reads it (docs/commands.md).
"""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime, timezone

from evalrun.reports.text import safe_text


@dataclass(frozen=True)
class NoVerdict:
    """Why there is no verdict: `exit_code` None while the run is still going."""

    reason: str
    exit_code: int | None = None
    created: str = ""

    @classmethod
    def running(cls, started: str | None = None) -> "NoVerdict":
        started = started or datetime.now(timezone.utc).isoformat(timespec="seconds")
        return cls(f"evalrun started this run at {started} and has not written its verdict here: it is still "
                   "running, or it stopped before it finished", None, started)

    @classmethod
    def failed(cls, reason: str, exit_code: int) -> "NoVerdict":
        return cls(reason, exit_code, datetime.now(timezone.utc).isoformat(timespec="seconds"))

    @property
    def status(self) -> str:
        return "running" if self.exit_code is None else "error"

    @property
    def headline(self) -> str:
        return ("NO VERDICT (run not finished)" if self.exit_code is None
                else f"NO VERDICT (the run failed, exit {self.exit_code})")

    def text(self) -> str:
        return safe_text(self.reason)

    def json(self) -> str:
        return json.dumps({"status": self.status, "verdict": "NO VERDICT", "passed": False,
                           "exit_code": self.exit_code, "error": self.text(), "created": self.created},
                          indent=2) + "\n"

    def markdown(self) -> str:
        reason = html.escape(" ".join(self.text().split()))
        return f"## evalrun: ❌ {self.headline}\n\n{reason}\n"

    def junit(self) -> str:
        root = ET.Element("testsuites", name="evalrun", tests="1", failures="0", errors="1", skipped="0", time="0")
        suite = ET.SubElement(root, "testsuite", name="evalrun", tests="1", failures="0", errors="1", skipped="0",
                              time="0")
        case = ET.SubElement(suite, "testcase", classname="evalrun", name="verdict", time="0")
        kind = "RunNotFinished" if self.exit_code is None else "RunFailed"
        ET.SubElement(case, "error", message=self.text(), type=kind).text = self.text()
        ET.indent(root)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

    def html(self) -> str:
        title = html.escape(f"evalrun: {self.headline}")
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta http-equiv=\"Content-Security-Policy\" "
                "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
                f"<title>{title}</title><style>body{{font-family:sans-serif;margin:1.5rem}}"
                f".bad{{color:#b00020}}</style></head><body><h1 class=\"bad\">{title}</h1>"
                f"<p id=\"reason\">{html.escape(self.text())}</p></body></html>\n")
