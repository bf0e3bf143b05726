"""Notebook widgets (ipywidgets 8): Check buttons, the live cluster map, course progress, latency plots, DCGM metrics,
lab reset.

Each widget is a small class holding its ipywidgets (``.widget``) that
displays itself when it is the value of a cell, plus a function that builds it::

    from gpulab import widgets
    widgets.check_button("lab01.allocatable_gpus", answer_from="allocatable_gpus")
    widgets.cluster_map()
"""
from __future__ import annotations

from .check_button import CheckButton, check_button
from .cluster_map import ClusterMap, cluster_map
from .dcgm_plot import DcgmPlot, Readings, dcgm_plot, dcgm_readings
from .latency_plot import LatencyExplorer, latency_explorer, latency_figure, mps_curve_basis
from .progress_panel import ProgressPanel, progress_panel
from .reset_button import ResetButton, reset_button

__all__ = ["CheckButton", "ClusterMap", "DcgmPlot", "LatencyExplorer", "ProgressPanel", "Readings", "ResetButton",
           "check_button", "cluster_map", "dcgm_plot", "dcgm_readings", "latency_explorer", "latency_figure",
           "mps_curve_basis", "progress_panel", "reset_button"]
