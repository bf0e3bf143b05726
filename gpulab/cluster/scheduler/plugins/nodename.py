"""NodeName (pkg/scheduler/framework/plugins/nodename): a pod naming a node fits only that node. Pods with
``spec.nodeName`` never reach this scheduler's queue, so in practice it always passes."""
from __future__ import annotations

from ..status import Status, unresolvable

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


def filter_node(node_name_wanted: str, node_name: str) -> Status | None:
    if not node_name_wanted or node_name_wanted == node_name:
        return None
    return unresolvable(ERR_REASON, plugin=NAME)
