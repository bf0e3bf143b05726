"""NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity).

PreFilter skips pods without ``spec.nodeSelector`` or required node affinity.
Filter: ``spec.nodeSelector`` and the required node affinity terms; nodes that
do not match are rejected with ``node(s) didn't match Pod's node affinity/selector``.
Score: the sum of the weights of the preferred terms a node matches, normalised
with ``helper.DefaultNormalizeScore(MaxNodeScore, false, ...)``; PreScore
skips pods without preferred terms. Weight 2 in the default profile.
The cache gives the matching nodes as node masks, for the fast path.
"""
from __future__ import annotations

from ..events import ADD, NODE, UPDATE, UPDATE_NODE_LABEL, ClusterEvent, ClusterEventWithHint
from ..interface import SETS, EnqueueExtensions, FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from ..nodeselectors import term_matches
from ..status import SKIP_STATUS, Status, unresolvable
from .helper import default_normalize_score

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
_REJECTION = unresolvable(ERR_REASON_POD, plugin=NAME)


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    NAME = NAME
    filter_scope = score_scope = SETS

    def pre_filter(self, state, pod) -> Status | None:
        return None if pod.required else SKIP_STATUS

    def filter(self, state, pod, node) -> Status | None:
        return None if pod.required.matches(node.labels, node.name) else _REJECTION

    def filter_sets(self, state, pod) -> list:
        return [self.handle.cache.selector_mask(pod.required)]

    def pre_score(self, state, pod, feasible) -> Status | None:
        return None if pod.preferred else SKIP_STATUS

    def score(self, state, pod, node) -> int:
        return sum(weight for weight, term in pod.preferred if term_matches(term, node.labels, node.name))

    def score_sets(self, state, pod) -> list:
        cache = self.handle.cache
        return [cache.term_mask(term) for _, term in pod.preferred]

    def normalize_score(self, state, pod, scores: list[int]) -> list[int]:
        return default_normalize_score(scores)

    def events_to_register(self) -> list:
        return [ClusterEventWithHint(NODE, frozenset({ADD, UPDATE_NODE_LABEL}), requeue)]


def requeue(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterNodeChange: an added node matches, or an updated node matches and did not before."""
    def matches(node: dict) -> bool:
        return pod.required.matches(node["metadata"].get("labels") or {}, node["metadata"]["name"])

    if not matches(event.new):
        return False
    return event.action != UPDATE or not matches(event.old)
