"""DCGM metrics in a notebook, read as on a real cluster: the dcgm-exporter's ``/metrics`` through the service proxy.

The GPU Operator's ``nvidia-dcgm-exporter`` Service (port ``gpu-metrics``, 9400)
fronts one exporter pod per GPU node; the API server's service proxy
(``/api/v1/namespaces/gpu-operator/services/nvidia-dcgm-exporter:gpu-metrics/proxy/metrics``,
what ``kubectl get --raw`` reads) hands each request to one of them at random.
So a reading for one node asks again until that node's exporter answers (its
samples carry ``Hostname``), as a learner repeating ``kubectl get --raw`` would;
Prometheus, which scrapes each endpoint, needs no such loop. The text is parsed
with ``prometheus_client``'s parser. Everything goes through the official
client and the learner's kubeconfig, so the same cells work on kind and on a
real GPU cluster.

* :func:`dcgm_readings` is one reading as a small table (what a cell prints);
* :func:`dcgm_plot` samples one metric every ``every`` seconds for ``seconds``
  (a minute by default) in a background thread and redraws its figure after
  each sample, so the cell returns at once and the plot fills in while the
  learner reads on; :meth:`DcgmPlot.wait` blocks until it is complete.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from .latency_plot import notebook_figure_class, figure_png
from ..learner.nodeagent import kwok_node

NAMESPACE = "gpu-operator"
SERVICE = "nvidia-dcgm-exporter:gpu-metrics"
# Requests before giving up on hearing from one node's exporter: with two GPU nodes behind the Service the chance
# that none of them reaches it is 2^-16.
TRIES = 16
# The labels that tell one GPU or MIG instance from another, in the exporter's own order.
ENTITY_LABELS = ("gpu", "GPU_I_PROFILE", "GPU_I_ID")


@dataclass(frozen=True)
class Sample:
    metric: str
    labels: dict
    value: float


@dataclass
class Scrape:
    """One exporter's answer: its samples and each metric's HELP text."""

    samples: list[Sample]
    helps: dict[str, str] = field(default_factory=dict)

    def hostname(self) -> str:
        return next((s.labels.get("Hostname", "") for s in self.samples), "")


def parse(text: str) -> Scrape:
    """Prometheus text (format 0.0.4) to samples; a counter keeps its family's name (the parser's sample names
    gain ``_total``)."""
    from prometheus_client.parser import text_string_to_metric_families

    scrape = Scrape([])
    for family in text_string_to_metric_families(text):
        scrape.helps[family.name] = family.documentation
        scrape.samples += [Sample(family.name, dict(s.labels), float(s.value)) for s in family.samples]
    return scrape


def scrape(api_client, node: str, *, namespace: str = NAMESPACE, tries: int = TRIES) -> Scrape:
    """``node``'s exporter's metrics through the service proxy, asking again while another node's answers."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(api_client)
    heard: set[str] = set()
    for _ in range(tries):
        text = core.connect_get_namespaced_service_proxy_with_path(SERVICE, namespace, "metrics")
        answer = parse(text)
        if answer.hostname() == node:
            return answer
        heard.add(answer.hostname() or "(no GPUs)")
    raise LookupError(f"the dcgm-exporter of node {node!r} did not answer in {tries} requests to the service "
                      f"{namespace}/{SERVICE} (heard from: {', '.join(sorted(heard))}); is {node!r} a GPU node "
                      f"with its exporter Running? `kubectl get pods -n {namespace} -l app=nvidia-dcgm-exporter "
                      "-o wide` shows where they run")


def _api_client(client):
    if client is not None:
        return client
    from ..learner.connection import current

    return current().api_client


def entity(labels: dict) -> tuple[str, ...]:
    return tuple(labels.get(k, "") for k in ENTITY_LABELS)


def _number(value: float) -> str:
    return f"{int(value)}" if value == int(value) else f"{value:g}"


def _matches(sample: Sample, wanted: dict[str, str]) -> bool:
    return all(sample.labels.get(k) == v for k, v in wanted.items())


class Readings:
    """A table of one scrape: a row per GPU or MIG instance, a column per metric, and the pod the exporter names."""

    def __init__(self, node: str, metrics: list[str], answer: Scrape, wanted: dict[str, str]):
        self.node, self.metrics = node, metrics
        chosen = [s for s in answer.samples if s.metric in metrics and _matches(s, wanted)]
        missing = [m for m in metrics if not any(s.metric == m for s in answer.samples)]
        if missing:
            raise LookupError(f"node {node}'s dcgm-exporter reports no {', '.join(missing)} (it reports "
                              f"{len(answer.helps)} metrics: {', '.join(sorted(answer.helps))})")
        self.rows: dict[tuple[str, ...], dict] = {}
        for sample in chosen:
            row = self.rows.setdefault(entity(sample.labels), {"pod": sample.labels.get("pod", "")})
            row[sample.metric] = sample.value
        self.model = next((s.labels.get("modelName", "") for s in chosen), "")

    def value(self, metric: str, gpu: str, instance: str = "") -> float:
        return next(r[metric] for key, r in self.rows.items() if key[0] == gpu and key[2] == instance)

    def __repr__(self) -> str:
        mig = any(key[2] for key in self.rows)
        pods = any(r["pod"] for r in self.rows.values())
        header = ["GPU"] + (["PROFILE", "INSTANCE"] if mig else []) + self.metrics + (["POD"] if pods else [])
        lines = [header]
        for key, row in sorted(self.rows.items(), key=lambda kv: tuple(int(p) if p.isdigit() else -1
                                                                      for p in (kv[0][0], kv[0][2]))):
            cells = [key[0]] + ([key[1], key[2]] if mig else [])
            cells += [_number(row[m]) if m in row else "" for m in self.metrics] + ([row["pod"]] if pods else [])
            lines.append(cells)
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        table = ["   ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
        title = f"{self.node} ({self.model})" if self.model else self.node
        return "\n".join([title] + table) if self.rows else f"{title}: no samples match"


class NoExporter:
    """What a reading or plot shows where the node runs no containers (a KWOK node of the upstream engine): the
    exporter's metrics come from its container, and nothing serves them."""

    def __init__(self, node: str):
        self.node = node

    def __repr__(self) -> str:
        return (f"{self.node} is a KWOK node (this cluster is gpulab's upstream engine): it runs no containers, so "
                "no dcgm-exporter serves its metrics. The embedded cluster, kind and real GPU clusters show them "
                "here.")

    def _ipython_display_(self) -> None:
        print(repr(self))


def dcgm_readings(metrics: str | list[str], *, node: str, client=None, namespace: str = NAMESPACE,
                  **labels: str) -> Readings | NoExporter:
    """One reading of ``metrics`` on ``node``'s GPUs (keyword ``labels`` keep only matching samples, e.g.
    ``pod="mig-worker"``); printed, a table."""
    wanted = [metrics] if isinstance(metrics, str) else list(metrics)
    if kwok_node(_api_client(client), node):
        return NoExporter(node)
    return Readings(node, wanted, scrape(_api_client(client), node, namespace=namespace), labels)


def series_name(labels: dict) -> str:
    gpu, profile, instance = entity(labels)
    return f"GPU {gpu} {profile} #{instance}" if instance else f"GPU {gpu}"


class DcgmPlot:
    """One metric of one node over time: a line per GPU or MIG instance, sampled in a background thread."""

    def __init__(self, metric: str, *, node: str, seconds: float = 60, every: float = 5, client=None,
                 namespace: str = NAMESPACE):
        import ipywidgets as w

        if not (seconds > 0 and every > 0):
            raise ValueError(f"seconds ({seconds}) and every ({every}) must be positive: "
                             "e.g. seconds=60, every=5 samples for a minute, every 5 s")
        self.metric, self.node, self.seconds, self.every = metric, node, seconds, every
        self._client, self._namespace = _api_client(client), namespace
        self.times: list[float] = []
        self.series: dict[str, list[float | None]] = {}
        self.help = ""
        self.error: str | None = None
        self.image = w.Image(format="png")
        self.caption = w.HTML()
        self.widget = w.VBox([self.image, self.caption])
        self._stop = threading.Event()
        self._started = time.monotonic()
        self.sample()        # the first one here, so a wrong node or metric is an error in the cell
        self._thread = threading.Thread(target=self._run, daemon=True, name="gpulab-dcgm-plot")
        self._thread.start()

    def sample(self) -> None:
        """Read the metric once and redraw."""
        answer = scrape(self._client, self.node, namespace=self._namespace)
        chosen = [s for s in answer.samples if s.metric == self.metric]
        if not chosen:
            raise LookupError(f"node {self.node}'s dcgm-exporter reports no {self.metric} (it reports: "
                              f"{', '.join(sorted(answer.helps))}; GPU_UTIL is not reported for MIG-enabled GPUs, "
                              "DCGM_FI_PROF_GR_ENGINE_ACTIVE is, per instance)")
        self.help = answer.helps.get(self.metric, "")
        index = len(self.times)
        self.times.append(round(time.monotonic() - self._started, 1))
        for s in chosen:
            line = self.series.setdefault(series_name(s.labels), [None] * index)
            line.append(s.value)
        for line in self.series.values():
            line.extend([None] * (index + 1 - len(line)))
        self.draw()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            if time.monotonic() - self._started > self.seconds:
                break
            try:
                self.sample()
                self.error = None
            except Exception as exc:  # noqa: BLE001 - shown under the plot; the next sample may succeed
                self.error = f"{type(exc).__name__}: {exc}".splitlines()[0]
                self._caption()
        self._caption(done=True)

    def figure(self):
        fig = notebook_figure_class()(figsize=(7.5, 3.6), layout="constrained")
        ax = fig.add_subplot()
        for name, values in sorted(self.series.items(), key=lambda kv: kv[0]):
            ax.plot(self.times, [float("nan") if v is None else v for v in values], marker=".", label=name)
        highest = max((v for values in self.series.values() for v in values if v is not None), default=0)
        ax.set_xlim(0, max(self.seconds, self.times[-1] if self.times else 0))
        ax.set_ylim(0, max(highest * 1.1, 1))
        ax.set_xlabel("seconds")
        ax.set_ylabel(self.help or self.metric)
        ax.set_title(f"{self.metric} on {self.node}")
        if len(self.series) <= 16:
            ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.0, 0.5))
        return fig

    def draw(self) -> None:
        self.image.value = figure_png(self.figure())
        self._caption()

    def _caption(self, done: bool = False) -> None:
        state = "done" if done else f"sampling every {self.every:g} s for {self.seconds:g} s"
        latest = ", ".join(f"{name}: {_number(values[-1])}" for name, values in sorted(self.series.items())
                           if values and values[-1] is not None)
        error = f' <span style="color:#cf222e">{self.error}</span>' if self.error else ""
        self.caption.value = f"<small>{len(self.times)} samples, {state}; latest: {latest}</small>{error}"

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the sampling is over; True when it is."""
        self._thread.join(timeout)
        return not self.running

    def stop(self) -> bool:
        self._stop.set()
        return self.wait(10)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def dcgm_plot(metric: str = "DCGM_FI_DEV_GPU_UTIL", *, node: str, seconds: float = 60, every: float = 5,
              client=None, namespace: str = NAMESPACE) -> DcgmPlot | NoExporter:
    if kwok_node(_api_client(client), node):
        return NoExporter(node)
    return DcgmPlot(metric, node=node, seconds=seconds, every=every, client=client, namespace=namespace)
