"""The in-process components of an embedded cluster, in the order they start.

Each entry builds one component from the API and the runtime configuration;
a component has a ``name`` and an ``async run()`` that never returns. This is
the one place that says what runs inside the cluster process (the control
plane's controllers, the scheduler, the node agent).
"""
from __future__ import annotations

from .controllers.daemonset import DaemonSetController
from .controllers.deployment import DeploymentController
from .controllers.disruption import DisruptionController
from .controllers.garbagecollector import GarbageCollector
from .controllers.job import JobController
from .controllers.namespace import NamespaceController
from .controllers.node_lifecycle import NodeLifecycleController
from .controllers.podgc import PodGCController
from .controllers.replicaset import ReplicaSetController
from .controllers.resourceclaim import ResourceClaimController
from .controllers.serviceaccount import ServiceAccountController
from .controllers.taint_eviction import TaintEvictionController
from .controllers.ttlafterfinished import TTLAfterFinishedController
from .kubelet import Kubelet
from .scheduler import Scheduler


def build(api, config) -> list:
    return [
        NamespaceController(api),
        ServiceAccountController(api, config.pki.ca_cert.read_text()),
        GarbageCollector(api),
        DeploymentController(api),
        ReplicaSetController(api),
        DaemonSetController(api),
        JobController(api),
        TTLAfterFinishedController(api),
        DisruptionController(api),
        NodeLifecycleController(api),
        TaintEvictionController(api),
        PodGCController(api),
        ResourceClaimController(api),
        Scheduler(api),
        Kubelet(api),
    ]
