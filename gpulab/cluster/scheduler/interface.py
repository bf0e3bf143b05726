"""The scheduling framework's plugin interface, after kube-scheduler's (staging/src/k8s.io/kube-scheduler/framework/
interface.go, pkg/scheduler/framework/interface.go).

A plugin is a class with a ``NAME`` that inherits one base class per extension
point it implements, as a Go plugin asserts ``var _ fwk.FilterPlugin = &X{}``;
the framework (``runtime.Framework``) sorts the profile's plugins into those
extension points with ``isinstance``. It is built as ``Plugin(handle, args)``:
the handle is the profile scheduler (the cache, the API, the clock, waiting
pods, informers), ``args`` the plugin's arguments from the profile.

Methods take the cycle's ``CycleState``, the pod being scheduled (``PodInfo``)
and a node (``cache.NodeInfo``), and return a ``status.Status`` for a
rejection or None for success, as the Go methods return a nil ``*Status``.

The fast path: upstream runs Filter and Score once per node. Here a Filter or
Score plugin also says what its answer depends on (``filter_scope``,
``score_scope``), and the framework asks it once per group of nodes that
share that:

* ``TAINTS``: the node's taints and ``spec.unschedulable`` (once per taint class);
* ``RESOURCES``: its resources: allocatable, requests of its pods, pod count (once per resource bucket);
* ``SETS``: which of the node sets the plugin returns for this pod from
  ``filter_sets``/``score_sets`` contain it: sets of names, or the cache's node
  masks (integers with a bit per node, e.g. ``cache.label_mask``), usually built
  from its indexes (nodes with a label value, nodes holding matching pods);
* ``NODE`` (the default): anything about the node, so every node is asked.

The per-node method is the one implementation of the plugin's logic; the scope
only tells the framework which nodes it may skip. Preemption and nominated
nodes always run it node by node.
"""
from __future__ import annotations

from dataclasses import dataclass

from .status import Status

MAX_NODE_SCORE = 100  # fwk.MaxNodeScore

TAINTS, RESOURCES, SETS, NODE = "taints", "resources", "sets", "node"


class CycleState:
    """Data plugins keep for one scheduling cycle (fwk.CycleState), keyed by plugin name, and the plugins that
    asked to be skipped. ``clone`` copies every value that has a ``clone`` method (PreFilter state that
    AddPod/RemovePod change during preemption's dry run)."""

    __slots__ = ("data", "skip_filter", "skip_score")

    def __init__(self) -> None:
        self.data: dict[str, object] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()

    def read(self, key: str):
        return self.data.get(key)

    def write(self, key: str, value) -> None:
        self.data[key] = value

    def clone(self) -> CycleState:
        other = CycleState()
        other.data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self.data.items()}
        other.skip_filter, other.skip_score = self.skip_filter, self.skip_score
        return other


class Plugin:
    NAME = ""

    def __init__(self, handle, args: dict | None = None):
        self.handle = handle
        self.args = dict(args or {})


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod) -> Status | None:
        """Whether the pod may enter activeQ; a status keeps it out (gated) until an update."""
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    def sort_key(self, qpi) -> tuple:
        """Less(a, b) as a sort key of a QueuedPodInfo: smaller keys are scheduled first."""
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    def pre_filter(self, state: CycleState, pod) -> Status | None:
        """Compute the cycle's state; a rejection fails the pod on every node, ``SKIP_STATUS`` skips its Filter."""
        raise NotImplementedError

    # PreFilterExtensions: keep the PreFilter state true when preemption or nominated pods change a node.
    def add_pod(self, state: CycleState, pod, added, node) -> None:
        self.update_with_pod(state, pod, added, node, 1)

    def remove_pod(self, state: CycleState, pod, removed, node) -> None:
        self.update_with_pod(state, pod, removed, node, -1)

    def update_with_pod(self, state: CycleState, pod, other, node, delta: int) -> None:
        """AddPod (delta 1) and RemovePod (delta -1) of ``other`` on ``node``, for plugins that count pods."""
        return None


class FilterPlugin(Plugin):
    filter_scope = NODE

    def filter(self, state: CycleState, pod, node) -> Status | None:
        raise NotImplementedError

    def filter_sets(self, state: CycleState, pod) -> list:
        """For ``filter_scope = SETS``: node sets (names or node masks) such that nodes in the same sets get the
        same verdict."""
        return []


@dataclass(frozen=True)
class PostFilterResult:
    """A PostFilter plugin's answer: its status and the node to nominate (None: leave it, '': clear it)."""

    status: Status | None
    nominated_node: str | None = None


class PostFilterPlugin(Plugin):
    def post_filter(self, state: CycleState, pod, diagnosis) -> PostFilterResult:
        """Try to make the pod schedulable after it fit no node (preemption); None status means it worked."""
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod, feasible) -> Status | None:
        """Compute the scoring state from the feasible nodes (``search.FeasibleNodes``); ``SKIP_STATUS`` skips
        the plugin's Score."""
        raise NotImplementedError


class ScorePlugin(Plugin):
    score_scope = NODE

    def score(self, state: CycleState, pod, node) -> int:
        raise NotImplementedError

    def score_sets(self, state: CycleState, pod) -> list:
        """For ``score_scope = SETS``: node sets (names or node masks) such that nodes in the same sets get the
        same score."""
        return []

    def normalize_score(self, state: CycleState, pod, scores: list[int]) -> list[int]:
        """ScoreExtensions.NormalizeScore. ``scores`` holds one entry per group of equally scored nodes, which
        is exact for normalisations that depend on the lowest and highest score only (all upstream ones)."""
        return scores


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod, node_name: str) -> None:
        return None


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod, node_name: str) -> tuple[Status | None, float]:
        """(status, timeout): None to allow, a ``WAIT`` status to hold the pod for up to ``timeout`` seconds."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    def pre_bind(self, state: CycleState, pod, node_name: str) -> Status | None:
        raise NotImplementedError


class BindPlugin(Plugin):
    def bind(self, state: CycleState, pod, node_name: str) -> Status | None:
        """Bind the pod; ``SKIP_STATUS`` passes it to the next Bind plugin."""
        raise NotImplementedError


class EnqueueExtensions(Plugin):
    def events_to_register(self) -> list:
        """The ``events.ClusterEventWithHint`` that may make a pod this plugin rejected schedulable."""
        raise NotImplementedError
