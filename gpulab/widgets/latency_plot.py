"""Plots of the sharing latency model (``gpulab.gpustack.latency``) beside the H200 measurements it is calibrated on.

``latency_figure`` draws p50 and p99 of one request against the number of busy
neighbours: the measured H200 points (run 1 of data/h200-timeslicing.json),
the model's time-slicing curves, its MPS p99 curves (without a thread limit, and
with the device plugin's ``100 / replicas`` limit for as many replicas as the
plot has pods), and flat lines for an exclusive GPU and a MIG slice, which
neighbours do not reach. ``latency_explorer`` adds sliders and a choice of the
sharing modes to draw. ``mps_curve_basis`` is the note on the published figures
the MPS curve rests on (it is a model; nothing of it was measured here). The
figure is a bare ``matplotlib.figure.Figure`` (no pyplot state), rendered to
PNG for the widget, so it behaves the same under any matplotlib backend.
"""
from __future__ import annotations

import io
from functools import cache

from ..gpustack import latency
from ..gpustack.hardware import gpu_model


def smallest_mig_profile(model: str) -> str:
    return min(gpu_model(model).mig_profiles, key=lambda p: (p.compute_slices, p.memory_mib)).name


MODE_LABELS = {"time-slicing": "time-slicing", "mps": "MPS", "mig": "MIG", "exclusive": "whole GPU"}


def latency_figure(*, model: str = "H200", request_ms: float | None = None, duty: float = 1.0,
                   mig_profile: str | None = None, max_neighbours: int = 4, p99_budget_ms: float | None = None,
                   modes: tuple[str, ...] = tuple(MODE_LABELS), mps_thread_percentage: float | None = None):
    """The figure: measured points, model curves, exclusive and MIG lines, and an optional p99 budget.

    ``modes`` picks the sharing modes drawn (default: all four). The MPS curves
    are p99 without a thread limit and with ``mps_thread_percentage`` (default:
    what the device plugin sets for ``max_neighbours + 1`` replicas). It shows
    itself as a PNG when it is a cell's value, with or without ``%matplotlib inline``.
    """
    unknown = [m for m in modes if m not in MODE_LABELS]
    if unknown:
        raise ValueError(f"unknown mode(s) {', '.join(map(repr, unknown))}; choose from {', '.join(MODE_LABELS)}")
    profile = mig_profile or smallest_mig_profile(model)
    neighbours = list(range(max_neighbours + 1))
    common = {"duty": duty, "request_ms": request_ms, "model": model}

    fig = notebook_figure_class()(figsize=(7.5, 4.2), layout="constrained")
    ax = fig.add_subplot()
    if "time-slicing" in modes:
        shared = [latency.expected_latency("time-slicing", neighbours=k, **common) for k in neighbours]
        ax.plot(neighbours, [r["p99_ms"] for r in shared], "-", color="tab:red", label="time-slicing p99 (model)")
        ax.plot(neighbours, [r["p50_ms"] for r in shared], "--", color="tab:red", label="time-slicing p50 (model)")
    if "mps" in modes:
        _plot_mps(ax, neighbours, common, mps_thread_percentage)
    if "mig" in modes:
        mig = latency.expected_latency("mig", request_ms=request_ms, mig_profile=profile, model=model)
        ax.axhline(mig["p99_ms"], color="tab:blue", label=f"MIG {profile} p99 (model)")
    if "exclusive" in modes:
        exclusive = latency.expected_latency("exclusive", request_ms=request_ms, model=model)
        ax.axhline(exclusive["p99_ms"], color="tab:green", label="whole GPU p99 (model)")
    measured = [r for r in latency.measured_rows() if r["run"] == 1 and r["neighbours"] <= max_neighbours]
    if model == "H200" and request_ms is None and duty == 1.0 and "time-slicing" in modes:
        ax.plot([r["neighbours"] for r in measured], [r["p99_ms"] for r in measured], "o", color="black",
                label="measured p99 (H200)")
        ax.plot([r["neighbours"] for r in measured], [r["p50_ms"] for r in measured], "x", color="black",
                label="measured p50 (H200)")
    if p99_budget_ms is not None:
        ax.axhline(p99_budget_ms, color="gray", linestyle=":", label=f"p99 budget {p99_budget_ms:g} ms")
    ax.set_xlabel("busy neighbours on the same GPU")
    ax.set_ylabel("request latency (ms)")
    ax.set_xticks(neighbours)
    ax.set_title(f"One request on an {model}: {', '.join(MODE_LABELS[m] for m in modes) or 'no sharing mode chosen'}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", loc="upper left")
    return fig


def _plot_mps(ax, neighbours: list[int], common: dict, percentage: float | None) -> None:
    """MPS p99 without a thread limit, and with ``percentage`` (default: the device plugin's for this many pods)."""
    replicas = len(neighbours)
    limited = latency.device_plugin_thread_percentage(replicas) if percentage is None else percentage
    unlimited = [latency.expected_latency("mps", neighbours=k, **common)["p99_ms"] for k in neighbours]
    ax.plot(neighbours, unlimited, "-", color="tab:purple", label="MPS p99, no thread limit (model)")
    if limited < 100:
        capped = [latency.expected_latency("mps", neighbours=k, active_thread_percentage=limited, **common)["p99_ms"]
                  for k in neighbours]
        source = f" = 100/{replicas} replicas" if percentage is None else ""
        ax.plot(neighbours, capped, "-.", color="tab:purple", label=f"MPS p99, {limited:g}% threads{source} (model)")


def mps_curve_basis():
    """The note on what the MPS curve rests on (published figures, cited), as Markdown a notebook displays."""
    from IPython.display import Markdown

    return Markdown(latency.MPS_CURVE_BASIS)


@cache
def notebook_figure_class():
    """A matplotlib Figure that IPython displays as a PNG (a plain Figure prints as ``<Figure size ...>``
    unless ``%matplotlib inline`` registered a formatter for it)."""
    from matplotlib.figure import Figure

    class NotebookFigure(Figure):
        def _repr_png_(self) -> bytes:
            return figure_png(self)

    return NotebookFigure


def figure_png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96)
    return buffer.getvalue()


class LatencyExplorer:
    """Sliders for the GPU model, the request's time, the neighbours' duty cycle, the p99 budget and MPS's thread
    limit, and a box per sharing mode to draw."""

    def __init__(self, **initial):
        import ipywidgets as w

        models = [m.key.split("-")[0] for m in latency_models()]
        self.model = w.Dropdown(options=models, value=initial.get("model", "H200"), description="GPU")
        self.request = w.FloatLogSlider(value=initial.get("request_ms", latency.request_ms_default()), base=10,
                                        min=-1, max=1.5, step=0.05, description="request ms")
        self.duty = w.FloatSlider(value=initial.get("duty", 1.0), min=0.0, max=1.0, step=0.05, description="duty")
        self.budget = w.FloatSlider(value=initial.get("p99_budget_ms", 5.0), min=0.5, max=30, step=0.5,
                                    description="p99 budget")
        shown = initial.get("modes", tuple(MODE_LABELS))
        self.modes = {mode: w.Checkbox(value=mode in shown, description=label, indent=False,
                                       layout=w.Layout(width="auto", margin="0 1.5em 0 0"))
                      for mode, label in MODE_LABELS.items()}
        self.mps_threads = w.IntSlider(value=initial.get("mps_thread_percentage",
                                                         latency.device_plugin_thread_percentage(5)),
                                       min=1, max=100, step=1, description="MPS threads %",
                                       style={"description_width": "initial"})
        self.image = w.Image(format="png")
        for control in (self.model, self.request, self.duty, self.budget, self.mps_threads, *self.modes.values()):
            control.observe(lambda _: self.draw(), names="value")
        self.widget = w.VBox([w.HBox([self.model, self.request]), w.HBox([self.duty, self.budget]),
                              w.HBox([*self.modes.values()]), self.mps_threads, self.image])
        self.draw()

    def draw(self) -> None:
        modes = tuple(mode for mode, box in self.modes.items() if box.value)
        fig = latency_figure(model=self.model.value, request_ms=self.request.value, duty=self.duty.value,
                             p99_budget_ms=self.budget.value, modes=modes,
                             mps_thread_percentage=self.mps_threads.value)
        self.image.value = figure_png(fig)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def latency_models():
    """The catalog's GPU models that have MIG profiles (one per family name)."""
    from ..gpustack.hardware import catalog

    seen, models = set(), []
    for model in catalog():
        short = model.key.split("-")[0]
        if model.mig_profiles and short not in seen:
            seen.add(short)
            models.append(model)
    return models


def latency_explorer(**initial) -> LatencyExplorer:
    return LatencyExplorer(**initial)
