"""How speed figures read in every report (terminal, Markdown, HTML): one format, no arithmetic."""

from __future__ import annotations

DASH = "–"


def size(n: float | None, signed: bool = False) -> str:
    """Bytes in binary units: 46.1 KiB, 1.24 GiB (signed: +/-, for memory saved)."""
    if n is None:
        return DASH
    sign = ("+" if n > 0 else "−" if n < 0 else "") if signed else ("−" if n < 0 else "")
    v = abs(float(n))
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if v < 1024 or unit == "TiB":
            return f"{sign}{v:.0f} {unit}" if unit == "B" or v >= 100 else f"{sign}{v:.3g} {unit}"
        v /= 1024
    return DASH  # pragma: no cover


def seconds(x: float | None) -> str:
    """Latency with the unit that keeps three significant digits readable: 183 ms, 2.41 s."""
    if x is None:
        return DASH
    if x < 1.0:
        return f"{1000 * x:.3g} ms"
    return f"{x:.3g} s"


def rate(x: float | None, digits: int = 1) -> str:
    return DASH if x is None else f"{x:,.{digits}f}"


def ratio(x: float | None, low: float | None = None, high: float | None = None) -> str:
    """A speedup with its interval: 1.52× [1.31, 1.70]."""
    if x is None:
        return DASH
    text = f"{x:.2f}×"
    if low is not None and high is not None:
        text += f" [{low:.2f}, {high:.2f}]"
    return text


def delta_points(x: float | None, low: float | None = None, high: float | None = None) -> str:
    """An accuracy delta in points with its interval: −6.7 [−20.0, +0.0]."""
    if x is None:
        return DASH
    text = f"{x:+.1f}"
    if low is not None and high is not None:
        text += f" [{low:+.1f}, {high:+.1f}]"
    return text.replace("-", "−")
