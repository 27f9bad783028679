"""Charts drawn by evalrun as inline SVG: axes and ticks, and the curves and heatmaps built on them."""

from __future__ import annotations

from evalrun.reports.charts._svg import log_ticks, nice_ticks, tick_labels
from evalrun.reports.charts._charts import (
    Curve, CurvePoint, DistributionSeries, GateRegion, ScatterPoint, format_latency, latency_distribution,
    latency_throughput_curves, scatter_scales, speed_accuracy_scatter,
)

__all__ = ["Curve", "CurvePoint", "DistributionSeries", "GateRegion", "ScatterPoint", "format_latency",
           "latency_distribution", "latency_throughput_curves", "log_ticks", "nice_ticks", "scatter_scales",
           "speed_accuracy_scatter", "tick_labels"]
