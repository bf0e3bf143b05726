"""The in-process components of an embedded cluster, in the order they start.

Each entry builds one component from the API and the runtime configuration;
a component has a ``name`` and an ``async run()`` that never returns. This is
the one place that says what runs inside the cluster process (the control
plane's controllers, the scheduler, the node agent).
"""
from __future__ import annotations

from . import features
from .controllers.apiservices import APIServiceRegistrationController
from .controllers.clusterrole_aggregation import ClusterRoleAggregationController
from .controllers.cronjob import CronJobController
from .controllers.daemonset import DaemonSetController
from .controllers.deployment import DeploymentController
from .controllers.device_taint_eviction import DeviceTaintEvictionController
from .controllers.disruption import DisruptionController
from .controllers.endpoints import EndpointsController
from .controllers.endpointslice import EndpointSliceController
from .controllers.garbagecollector import GarbageCollector
from .controllers.job import JobController
from .controllers.localpath import LocalPathProvisioner
from .controllers.namespace import NamespaceController
from .controllers.node_lifecycle import NodeLifecycleController
from .controllers.nodeipam import NodeIpamController
from .controllers.persistentvolume import PersistentVolumeController
from .controllers.podgc import PodGCController
from .controllers.replicaset import ReplicaSetController
from .controllers.replicationcontroller import ReplicationControllerManager
from .controllers.resourcequota import ResourceQuotaController
from .controllers.resourceclaim import ResourceClaimController
from .controllers.serviceaccount import ServiceAccountController
from .controllers.statefulset import StatefulSetController
from .controllers.taint_eviction import TaintEvictionController
from .controllers.ttlafterfinished import TTLAfterFinishedController
from .kubelet import Kubelet
from .kubelet.images import load_catalog
from .scheduler import Scheduler


def build(api, config) -> list:
    return [
        NamespaceController(api),
        ServiceAccountController(api, config.pki.ca_cert.read_text()),
        ClusterRoleAggregationController(api),
        GarbageCollector(api),
        DeploymentController(api),
        ReplicaSetController(api),
        ReplicationControllerManager(api),
        DaemonSetController(api),
        StatefulSetController(api),
        JobController(api),
        CronJobController(api),
        TTLAfterFinishedController(api),
        DisruptionController(api),
        NodeLifecycleController(api),
        NodeIpamController(api),
        TaintEvictionController(api),
        PodGCController(api),
        EndpointsController(api),
        EndpointSliceController(api),
        PersistentVolumeController(api),
        LocalPathProvisioner(api),
        ResourceQuotaController(api),
        APIServiceRegistrationController(api),
        ResourceClaimController(api),
        # requiredFeatureGates of kube-controller-manager's descriptor: DynamicResourceAllocation, DRADeviceTaints
        *([DeviceTaintEvictionController(api)] if features.enabled("DRADeviceTaints") else []),
        Scheduler(api, config.cluster_name),
        Kubelet(api, catalog=load_catalog(*config.images())),
    ]
