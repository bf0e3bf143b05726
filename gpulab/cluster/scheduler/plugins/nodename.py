"""NodeName (pkg/scheduler/framework/plugins/nodename): a pod naming a node fits only that node. Pods with
``spec.nodeName`` never reach this scheduler's queue, so in practice it always passes."""
from __future__ import annotations

from ..interface import SETS, FilterPlugin
from ..status import Status, unresolvable

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"
_REJECTION = unresolvable(ERR_REASON, plugin=NAME)


class NodeName(FilterPlugin):
    NAME = NAME
    filter_scope = SETS

    def filter(self, state, pod, node) -> Status | None:
        if not pod.node_name or pod.node_name == node.name:
            return None
        return _REJECTION

    def filter_sets(self, state, pod) -> list:
        return [frozenset((pod.node_name,))] if pod.node_name else []
