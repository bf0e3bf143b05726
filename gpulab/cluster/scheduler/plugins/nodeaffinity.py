"""NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity).

Filter: ``spec.nodeSelector`` and the required node affinity terms; nodes that
do not match are rejected with ``node(s) didn't match Pod's node affinity/selector``.
Score: the sum of the weights of the preferred terms a node matches, normalised
with ``helper.DefaultNormalizeScore(MaxNodeScore, false, ...)``; PreScore
skips pods without preferred terms. Weight 2 in the default profile.
"""
from __future__ import annotations

from ..nodeselectors import LabelIndex, term_matches
from ..status import Status, unresolvable
from .events import ADD, NODE, UPDATE, ClusterEvent

NAME = "NodeAffinity"
WEIGHT = 2
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REJECTION = unresolvable(ERR_REASON_POD, plugin=NAME)


def allowed_nodes(pod, index: LabelIndex) -> frozenset[str] | None:
    """The nodes the pod's required constraints admit, or None when it has none (PreFilter returns Skip)."""
    if not pod.required:
        return None
    return index.required_members(pod.required)


def filter_node(pod, labels: dict, node_name: str) -> Status | None:
    if not pod.required or pod.required.matches(labels, node_name):
        return None
    return REJECTION


def score_node(pod, labels: dict, node_name: str) -> int:
    return sum(weight for weight, term in pod.preferred if term_matches(term, labels, node_name))


def score_members(pod, index: LabelIndex) -> list[tuple[int, frozenset[str]]]:
    """(weight, matching nodes) per preferred term, for scoring many nodes at once."""
    return [(weight, index.term_members(term)) for weight, term in pod.preferred]


def requeue(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterNodeChange: an added node matches, or an updated node matches and did not before."""
    if event.resource != NODE or event.action not in (ADD, UPDATE):
        return False
    if event.action == UPDATE and "label" not in event.changes:
        return False

    def matches(node: dict) -> bool:
        return pod.required.matches(node["metadata"].get("labels") or {}, node["metadata"]["name"])

    if not matches(event.new):
        return False
    return event.old is None or not matches(event.old)
