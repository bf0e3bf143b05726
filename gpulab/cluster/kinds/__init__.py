"""Every API kind the embedded cluster serves, one strategy module each, registered here.

A kind is one module of this package: a :class:`~gpulab.cluster.kinds.strategy.Strategy`
subclass naming the resource (group, version, plural, kind, scope, short
names, subresources), its defaulting, admission, PrepareForCreate and
PrepareForUpdate rules, validation, status reset fields, DELETE behaviour,
printer and selectable fields, as kube-apiserver's
pkg/registry/<group>/<kind>/strategy.go does. :data:`BUILTIN` lists them in
the order discovery reports them (a v1.37 kube-apiserver's); custom resources
get a :class:`~gpulab.cluster.kinds.custom.CustomResourceStrategy` per served
version of their CRD. Adding a kind: docs/architecture.md.
"""
from __future__ import annotations

from .. import features, printers
from ..errors import FieldError
from ..registry import Registry, ResourceType
from . import strategy as generic
from .apiservices import APIServiceStrategy
from .bindings import BindingStrategy
from .certificatesigningrequests import CertificateSigningRequestStrategy
from .clustertrustbundles import ClusterTrustBundleStrategy
from .componentstatuses import ComponentStatusStrategy
from .configmaps import ConfigMapStrategy
from .controllerrevisions import ControllerRevisionStrategy
from .cronjobs import CronJobStrategy
from .csidrivers import CSIDriverStrategy
from .csinodes import CSINodeStrategy
from .csistoragecapacities import CSIStorageCapacityStrategy
from .custom import CustomResourceStrategy
from .customresourcedefinitions import CustomResourceDefinitionStrategy
from .clusterrolebindings import ClusterRoleBindingStrategy
from .clusterroles import ClusterRoleStrategy
from .daemonsets import DaemonSetStrategy
from .deployments import DeploymentStrategy
from .endpoints import EndpointsStrategy
from .endpointslices import EndpointSliceStrategy
from .deviceclasses import DeviceClassStrategy
from .devicetaintrules import DeviceTaintRuleStrategy
from .events import EventStrategy
from .flowschemas import FlowSchemaStrategy
from .horizontalpodautoscalers import HorizontalPodAutoscalerStrategy
from .ingressclasses import IngressClassStrategy
from .ingresses import IngressStrategy
from .ipaddresses import IPAddressStrategy
from .jobs import JobStrategy
from .leases import LeaseStrategy
from .limitranges import LimitRangeStrategy
from .mutatingadmissionpolicies import MutatingAdmissionPolicyStrategy
from .mutatingadmissionpolicybindings import MutatingAdmissionPolicyBindingStrategy
from .mutatingwebhookconfigurations import MutatingWebhookConfigurationStrategy
from .namespaces import NamespaceStrategy
from .networkpolicies import NetworkPolicyStrategy
from .nodes import NodeStrategy
from .persistentvolumeclaims import PersistentVolumeClaimStrategy
from .persistentvolumes import PersistentVolumeStrategy
from .podcertificaterequests import PodCertificateRequestStrategy
from .poddisruptionbudgets import PodDisruptionBudgetStrategy
from .podgroups import PodGroupStrategy
from .pods import PodStrategy
from .podtemplates import PodTemplateStrategy
from .priorityclasses import PriorityClassStrategy
from .prioritylevelconfigurations import PriorityLevelConfigurationStrategy
from .replicasets import ReplicaSetStrategy
from .replicationcontrollers import ReplicationControllerStrategy
from .resourceclaims import ResourceClaimStrategy
from .resourceclaimtemplates import ResourceClaimTemplateStrategy
from .resourcequotas import ResourceQuotaStrategy
from .resourceslices import ResourceSliceStrategy
from .reviews import AUTHENTICATION, AUTHORIZATION
from .rolebindings import RoleBindingStrategy
from .roles import RoleStrategy
from .runtimeclasses import RuntimeClassStrategy
from .secrets import SecretStrategy
from .serviceaccounts import ServiceAccountStrategy
from .servicecidrs import ServiceCIDRStrategy
from .services import ServiceStrategy
from .statefulsets import StatefulSetStrategy
from .storageclasses import StorageClassStrategy
from .storageversionmigrations import StorageVersionMigrationStrategy
from .validatingadmissionpolicies import ValidatingAdmissionPolicyStrategy
from .validatingadmissionpolicybindings import ValidatingAdmissionPolicyBindingStrategy
from .validatingwebhookconfigurations import ValidatingWebhookConfigurationStrategy
from .volumeattachments import VolumeAttachmentStrategy
from .volumeattributesclasses import VolumeAttributesClassStrategy
from .strategy import Strategy
from .workloads import WorkloadStrategy

__all__ = ["BUILTIN", "Strategy", "builtin_registry", "builtin_types", "strategy_for", "table", "validate_create",
           "validate_update"]

BUILTIN: tuple[Strategy, ...] = (
    # core/v1
    BindingStrategy(), ComponentStatusStrategy(), ConfigMapStrategy(), EndpointsStrategy(), EventStrategy(),
    LimitRangeStrategy(), NamespaceStrategy(), NodeStrategy(), PersistentVolumeClaimStrategy(),
    PersistentVolumeStrategy(), PodStrategy(), PodTemplateStrategy(), ReplicationControllerStrategy(),
    ResourceQuotaStrategy(), SecretStrategy(), ServiceAccountStrategy(), ServiceStrategy(),
    # admissionregistration.k8s.io/v1
    MutatingAdmissionPolicyStrategy(), MutatingAdmissionPolicyBindingStrategy(),
    MutatingWebhookConfigurationStrategy(), ValidatingAdmissionPolicyStrategy(),
    ValidatingAdmissionPolicyBindingStrategy(), ValidatingWebhookConfigurationStrategy(),
    CustomResourceDefinitionStrategy(), APIServiceStrategy(),
    # apps/v1
    ControllerRevisionStrategy(), DaemonSetStrategy(), DeploymentStrategy(), ReplicaSetStrategy(), StatefulSetStrategy(),
    HorizontalPodAutoscalerStrategy(), CronJobStrategy(), JobStrategy(),
    CertificateSigningRequestStrategy(), ClusterTrustBundleStrategy(), PodCertificateRequestStrategy(),
    LeaseStrategy(), EndpointSliceStrategy(), FlowSchemaStrategy(), PriorityLevelConfigurationStrategy(),
    # networking.k8s.io/v1
    IngressClassStrategy(), IngressStrategy(), IPAddressStrategy(), NetworkPolicyStrategy(), ServiceCIDRStrategy(),
    RuntimeClassStrategy(), PodDisruptionBudgetStrategy(), PriorityClassStrategy(),
    # storage.k8s.io/v1
    CSIDriverStrategy(), CSINodeStrategy(), CSIStorageCapacityStrategy(), StorageClassStrategy(),
    VolumeAttachmentStrategy(), VolumeAttributesClassStrategy(),
    StorageVersionMigrationStrategy(),
    # authentication.k8s.io/v1, authorization.k8s.io/v1
    *AUTHENTICATION, *AUTHORIZATION,
    # rbac.authorization.k8s.io/v1
    ClusterRoleBindingStrategy(), ClusterRoleStrategy(), RoleBindingStrategy(), RoleStrategy(),
    # resource.k8s.io/v1
    DeviceClassStrategy(), DeviceTaintRuleStrategy(), ResourceClaimStrategy(), ResourceClaimTemplateStrategy(),
    ResourceSliceStrategy(),
    # scheduling.k8s.io/v1beta1 (behind their gates)
    WorkloadStrategy(), PodGroupStrategy(),
)

_BY_STORAGE_KEY = {s.resource.key: s for s in BUILTIN}


def builtin_types() -> tuple[ResourceType, ...]:
    """The built-in resources, each kind's own followed by its aliases (events.k8s.io/v1 events)."""
    return tuple(rt for s in BUILTIN if s.feature_gate is None or features.enabled(s.feature_gate)
                 for rt in (s.resource, *s.aliases))


def builtin_registry() -> Registry:
    """A registry serving the built-in kinds (and, once CRDs are added, their custom resources)."""
    return Registry(builtin_types())


def strategy_for(rt: ResourceType) -> Strategy:
    """The strategy of the objects ``rt`` stores (an alias gets its storage's)."""
    if rt.crd is not None:
        return CustomResourceStrategy(rt)
    return _BY_STORAGE_KEY[rt.storage_key]


def validate_create(rt: ResourceType, obj: dict) -> list[FieldError]:
    """Everything BeforeCreate checks of a prepared object of ``rt``."""
    return generic.validate_create(strategy_for(rt), obj)


def validate_update(rt: ResourceType, new: dict, old: dict, subresource: str | None = None) -> list[FieldError]:
    """Everything BeforeUpdate checks of an update through ``rt`` (or its ``subresource``)."""
    return generic.validate_update(strategy_for(rt), new, old, subresource)


def table(rt: ResourceType, objects: list[dict], *, now: float, include_object: str = "Metadata") -> dict:
    """The ``meta.k8s.io/v1`` Table of ``objects`` of ``rt`` as its kind's printer renders them at ``now``."""
    return printers.table(strategy_for(rt).printer, objects, now=now, include_object=include_object)
