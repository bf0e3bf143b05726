"""The ReplicationController manager: pkg/controller/replication.

Upstream runs the ReplicaSet controller over ReplicationControllers
converted to ReplicaSets (replication_controller.go wraps
replicaset.NewBaseController with conversion shims); here the same
controller runs over the ``replicationcontrollers`` key, reading the
selector as the plain label map a ReplicationController has. Events come
from ``replication-controller``.
"""
from __future__ import annotations

from ..selectors import Requirement, parse_label_selector
from .replicaset import ReplicaSetController

RC = "replicationcontrollers"


class ReplicationControllerManager(ReplicaSetController):
    name = "replication-controller"
    watches = (RC, "pods")
    resource, kind = RC, "ReplicationController"

    @staticmethod
    def selector(owner: dict) -> list[Requirement]:
        """labels.SelectorFromSet(spec.selector): an empty map selects nothing."""
        labels = (owner.get("spec") or {}).get("selector") or {}
        return parse_label_selector(",".join(f"{k}={v}" for k, v in sorted(labels.items()))) if labels else []
