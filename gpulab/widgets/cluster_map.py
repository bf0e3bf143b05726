"""A live map of the cluster: a card per node (labels, taints, GPUs, MIG slices, time-slice replicas, pods).

Three parts, so the picture can be tested without Jupyter or a cluster:

* :class:`ClusterModel` keeps the nodes and pods, fed by list results and
  watch events (ADDED/MODIFIED/DELETED, as the API server sends them);
* :func:`node_cards` and :func:`render_map` turn the model into cards and HTML;
* :class:`ClusterMap` is the widget: two watch threads (nodes, pods) through
  the official client feed the model, a third re-renders at most four times a
  second, and :meth:`ClusterMap.stop` ends all three within a few seconds
  (each watch asks the server to close it every ``WATCH_SECONDS``).
"""
from __future__ import annotations

import html
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal

from ..checks.gpus import (COUNT, MIG_CONFIG, MIG_RESOURCE_PREFIX, MIG_STATE, MIG_STRATEGY, PRODUCT, REPLICAS,
                           SHARING, labels, name, nvidia_allocatable)
from ..checks.kube import condition, node_name, phase, requested_resources, taint_text

WATCH_SECONDS = 2
RENDER_INTERVAL = 0.25
SYSTEM_NAMESPACES = ("kube-system", "gpu-operator", "scheduler-plugins", "local-path-storage")
# Labels worth a line on a card: the GPU stack's summary labels, and whatever the learner set (pool=...).
SHOWN_LABELS = (PRODUCT, COUNT, REPLICAS, SHARING, MIG_STRATEGY, MIG_CONFIG, MIG_STATE,
                "nvidia.com/gpu-driver-upgrade-state")   # the driver upgrade controller's step (module 01)
# A card never grows past its row for a long label, taint or pod name: lines break anywhere (a label has no
# spaces), and the notebook's own `code` style (white-space: pre in some front ends) is overridden in the map.
_WRAP = "box-sizing:border-box;max-width:100%;overflow-wrap:anywhere;word-break:break-word"
_CODE_WRAP = "<style>.gpulab-cluster-map code{white-space:pre-wrap;overflow-wrap:anywhere}</style>"
_MACHINE_PREFIXES = ("kubernetes.io/", "beta.kubernetes.io/", "node-role.kubernetes.io/", "node.kubernetes.io/",
                     "nvidia.com/", "feature.node.kubernetes.io/", "topology.kubernetes.io/")


class ClusterModel:
    """Nodes and pods by key, updated from lists and watch events; thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self.objects: dict[str, dict[tuple, dict]] = {"nodes": {}, "pods": {}}

    @staticmethod
    def _key(obj: dict) -> tuple:
        meta = obj.get("metadata") or {}
        return meta.get("namespace", ""), meta.get("name", "")

    def replace(self, kind: str, items: list[dict]) -> None:
        with self._lock:
            self.objects[kind] = {self._key(o): o for o in items}

    def apply(self, kind: str, event_type: str, obj: dict) -> None:
        with self._lock:
            if event_type == "DELETED":
                self.objects[kind].pop(self._key(obj), None)
            elif event_type in ("ADDED", "MODIFIED"):
                self.objects[kind][self._key(obj)] = obj

    def snapshot(self) -> tuple[list[dict], list[dict]]:
        with self._lock:
            return list(self.objects["nodes"].values()), list(self.objects["pods"].values())


@dataclass
class PodLine:
    name: str
    namespace: str
    phase: str
    gpus: dict[str, Decimal]


@dataclass
class NodeCard:
    name: str
    role: str
    ready: bool
    shown_labels: dict[str, str]
    taints: list[str]
    gpus: dict[str, tuple[Decimal, Decimal]]   # resource -> (allocatable, requested by pods on the node)
    pods: list[PodLine] = field(default_factory=list)
    system_pods: int = 0


def _learner_labels(node_labels: dict[str, str]) -> dict[str, str]:
    shown = {k: node_labels[k] for k in SHOWN_LABELS if k in node_labels}
    shown.update({k: v for k, v in sorted(node_labels.items()) if not k.startswith(_MACHINE_PREFIXES)})
    return shown


def node_cards(nodes: list[dict], pods: list[dict]) -> tuple[list[NodeCard], list[PodLine]]:
    """A card per node (control plane first, then by name) and the pods no node holds yet."""
    cards = {}
    for node in sorted(nodes, key=lambda n: ("node-role.kubernetes.io/control-plane" not in labels(n), name(n))):
        node_labels = labels(node)
        ready = (condition(node, "Ready") or {}).get("status") == "True"
        role = "control-plane" if "node-role.kubernetes.io/control-plane" in node_labels else "worker"
        cards[name(node)] = NodeCard(name(node), role, ready, _learner_labels(node_labels),
                                     [taint_text(t) for t in (node.get("spec") or {}).get("taints") or []],
                                     {r: (v, Decimal(0)) for r, v in nvidia_allocatable(node).items()})
    unscheduled = []
    for pod in sorted(pods, key=lambda p: ((p["metadata"].get("namespace") or ""), name(p))):
        if phase(pod) in ("Succeeded", "Failed"):
            continue
        line = PodLine(name(pod), pod["metadata"].get("namespace", ""), phase(pod), requested_resources(pod))
        card = cards.get(node_name(pod) or "")
        if card is None:
            unscheduled.append(line)
            continue
        for resource, amount in line.gpus.items():
            allocatable, used = card.gpus.get(resource, (Decimal(0), Decimal(0)))
            card.gpus[resource] = (allocatable, used + amount)
        if line.namespace in SYSTEM_NAMESPACES:
            card.system_pods += 1
        else:
            card.pods.append(line)
    return list(cards.values()), unscheduled


_PHASE_COLOURS = {"Running": "#1a7f37", "Pending": "#9a6700", "Succeeded": "#57606a", "Failed": "#cf222e"}


def _pod_html(line: PodLine) -> str:
    where = "" if line.namespace == "default" else f"{html.escape(line.namespace)}/"
    gpus = "".join(f" <code>{html.escape(r.removeprefix('nvidia.com/'))}:{v}</code>" for r, v in line.gpus.items())
    colour = _PHASE_COLOURS.get(line.phase, "#57606a")
    return f'<li>{where}{html.escape(line.name)} <span style="color:{colour}">{line.phase}</span>{gpus}</li>'


def _gpu_html(resource: str, allocatable: Decimal, used: Decimal) -> str:
    blocks = ""
    if allocatable <= 64:
        whole = int(allocatable)
        blocks = " " + "&#x25A0;" * min(int(used), whole) + "&#x25A1;" * max(whole - int(used), 0)
    return (f"<div><code>{html.escape(resource)}</code> {used}/{allocatable} used"
            f'<span style="letter-spacing:1px">{blocks}</span></div>')


def render_card(card: NodeCard) -> str:
    status = "Ready" if card.ready else "NotReady"
    parts = ['<div style="border:1px solid #d0d7de;border-radius:6px;padding:6px 8px;min-width:230px;'
             f'flex:1 1 230px;font-size:12px;{_WRAP}">',
             f"<div><b>{html.escape(card.name)}</b> <small>{card.role}, {status}</small></div>"]
    for key, value in card.shown_labels.items():
        parts.append(f"<div><code>{html.escape(key)}={html.escape(value)}</code></div>")
    for taint in card.taints:
        parts.append(f'<div style="color:#9a6700">taint <code>{html.escape(taint)}</code></div>')
    if card.gpus:
        for resource, (allocatable, used) in card.gpus.items():
            parts.append(_gpu_html(resource, allocatable, used))
        slices = [r for r in card.gpus if r.startswith(MIG_RESOURCE_PREFIX)]
        if slices:
            parts.append(f"<div><i>MIG: {len(slices)} slice profiles</i></div>")
        replicas = card.shown_labels.get(REPLICAS)
        if replicas not in (None, "0", "1"):
            parts.append(f"<div><i>time-sliced: each GPU shared {html.escape(replicas)} ways</i></div>")
    else:
        parts.append('<div style="color:#57606a">no GPUs advertised</div>')
    pods = "".join(_pod_html(p) for p in card.pods)
    system = f'<li style="color:#57606a">+ {card.system_pods} system pods</li>' if card.system_pods else ""
    parts.append(f'<ul style="margin:4px 0 0 0;padding-left:1.1em">{pods}{system}</ul></div>')
    return "".join(parts)


def render_map(nodes: list[dict], pods: list[dict], error: str | None = None) -> str:
    cards, unscheduled = node_cards(nodes, pods)
    parts = [_CODE_WRAP, '<div class="gpulab-cluster-map" style="display:flex;flex-wrap:wrap;gap:8px">']
    parts += [render_card(c) for c in cards]
    if unscheduled:
        items = "".join(_pod_html(p) for p in unscheduled)
        parts.append('<div style="border:1px dashed #9a6700;border-radius:6px;padding:6px 8px;min-width:200px;'
                     f'font-size:12px;{_WRAP}"><b>not scheduled</b>'
                     f'<ul style="margin:4px 0 0 0;padding-left:1.1em">{items}'
                     "</ul></div>")
    parts.append("</div>")
    if error:
        parts.append(f'<div style="color:#cf222e">watch interrupted: {html.escape(error)} (retrying)</div>')
    return "".join(parts)


class ClusterMap:
    """The live widget. ``ClusterMap()`` starts watching; ``stop()`` ends its threads."""

    def __init__(self, client=None, *, start: bool = True):
        import ipywidgets as w
        from kubernetes import client as k8s

        from ..learner.connection import current

        api_client = client if client is not None else current().api_client
        self._core = k8s.CoreV1Api(api_client)
        self.model = ClusterModel()
        self.html = w.HTML(value="<i>loading the cluster...</i>")
        self.widget = w.VBox([self.html])
        self.error: str | None = None
        self._stop = threading.Event()
        self._dirty = threading.Event()
        self._threads: list[threading.Thread] = []
        if start:
            self.start()

    def start(self) -> None:
        lists = {"nodes": self._core.list_node, "pods": self._core.list_pod_for_all_namespaces}
        self._threads = [threading.Thread(target=self._watch, args=(kind, func), daemon=True,
                                          name=f"gpulab-map-{kind}") for kind, func in lists.items()]
        self._threads.append(threading.Thread(target=self._render_loop, daemon=True, name="gpulab-map-render"))
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = WATCH_SECONDS + 3) -> bool:
        """Stop watching; True when every thread has ended."""
        self._stop.set()
        self._dirty.set()
        for thread in self._threads:
            thread.join(timeout)
        return not any(t.is_alive() for t in self._threads)

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def _watch(self, kind: str, list_func) -> None:
        import json

        from kubernetes import watch

        def raw_list(**kwargs):  # no :return: docstring, so Watch yields plain dicts
            return list_func(**kwargs)

        resource_version = None
        while not self._stop.is_set():
            try:
                if resource_version is None:
                    listed = json.loads(list_func(_preload_content=False).data)
                    self.model.replace(kind, listed["items"])
                    resource_version = listed["metadata"].get("resourceVersion")
                    self._dirty.set()
                stream = watch.Watch()
                for event in stream.stream(raw_list, resource_version=resource_version,
                                           timeout_seconds=WATCH_SECONDS, _request_timeout=WATCH_SECONDS + 5):
                    obj = event["object"]
                    if event["type"] == "ERROR":  # e.g. 410 Gone: the resourceVersion is too old, list again
                        resource_version = None
                        break
                    resource_version = (obj.get("metadata") or {}).get("resourceVersion") or resource_version
                    if event["type"] != "BOOKMARK":
                        self.model.apply(kind, event["type"], obj)
                        self._dirty.set()
                    if self._stop.is_set():
                        stream.stop()
                self.error = None
            except Exception as exc:  # noqa: BLE001 - keep watching through API hiccups; shown on the map
                self.error = f"{kind}: {exc}".splitlines()[0]
                resource_version = None
                self._dirty.set()
                self._stop.wait(1.0)

    def _render_loop(self) -> None:
        while not self._stop.is_set():
            self._dirty.wait()
            if self._stop.is_set():
                return
            self._dirty.clear()
            self.render()
            time.sleep(RENDER_INTERVAL)

    def render(self) -> str:
        nodes, pods = self.model.snapshot()
        self.html.value = render_map(nodes, pods, self.error)
        return self.html.value

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def cluster_map(client=None) -> ClusterMap:
    return ClusterMap(client)
