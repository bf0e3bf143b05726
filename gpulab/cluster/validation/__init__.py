"""Validation of every write, as the kube-apiserver registry runs it.

``validate_create`` / ``validate_update`` / ``validate_status_update`` pick the
kind's strategy validation (pkg/registry/<group>/<kind>/strategy.go) and add
the generic ObjectMeta checks of k8s.io/apiserver/pkg/registry/rest
(BeforeCreate runs them after the kind's own checks, and only when those
passed; validateCommonFields runs them before the kind's checks on every
update). Each returns a list of :class:`gpulab.cluster.errors.FieldError`;
``errors.invalid_object`` turns it into the 422 Status.
"""
from __future__ import annotations

import copy
from typing import Callable

from ..errors import FieldError
from ..registry import ResourceType
from . import apps, batch, core, other, pods
from .meta import validate_generic_create, validate_generic_update, validate_object_meta_update

CRD_KEY = "customresourcedefinitions.apiextensions.k8s.io"
# A stand-in uid for checking a job whose selector is generated after validation (see _job_create).
_PENDING_UID = "00000000-0000-0000-0000-000000000000"

_CREATE: dict[str, Callable[[dict], list[FieldError]]] = {
    "pods": pods.validate_pod_create,
    "nodes": core.validate_node,
    "namespaces": core.validate_namespace,
    "configmaps": core.validate_config_map,
    "secrets": core.validate_secret,
    "serviceaccounts": core.validate_service_account,
    "services": core.validate_service,
    "events": core.validate_event,
    "deployments.apps": apps.validate_deployment,
    "replicasets.apps": apps.validate_replicaset,
    "daemonsets.apps": apps.validate_daemonset,
    "controllerrevisions.apps": apps.validate_controller_revision,
    "leases.coordination.k8s.io": other.validate_lease,
    "poddisruptionbudgets.policy": other.validate_pdb,
    "priorityclasses.scheduling.k8s.io": other.validate_priority_class,
}

_UPDATE: dict[str, Callable[[dict, dict], list[FieldError]]] = {
    "pods": pods.validate_pod_update,
    "nodes": lambda new, old: core.validate_node(new) + core.validate_node_update(new, old),
    "namespaces": lambda new, old: (core.validate_namespace(new)
                                    + validate_object_meta_update(new["metadata"], old["metadata"])),
    "configmaps": core.validate_config_map_update,
    "secrets": core.validate_secret_update,
    "serviceaccounts": lambda new, old: (validate_object_meta_update(new["metadata"], old["metadata"])
                                         + core.validate_service_account(new)),
    "services": core.validate_service_update,
    "events": lambda new, old: core.validate_event(new),
    "deployments.apps": apps.validate_deployment_update,
    "replicasets.apps": apps.validate_replicaset_update,
    "daemonsets.apps": apps.validate_daemonset_update,
    "controllerrevisions.apps": apps.validate_controller_revision_update,
    "jobs.batch": batch.validate_job_update,
    "leases.coordination.k8s.io": other.validate_lease_update,
    "poddisruptionbudgets.policy": lambda new, old: other.validate_pdb(new),
    "priorityclasses.scheduling.k8s.io": other.validate_priority_class_update,
}

_STATUS: dict[str, Callable[[dict, dict], list[FieldError]]] = {
    "pods": pods.validate_pod_status_update,
    "nodes": core.validate_node_update,
    "namespaces": core.validate_namespace_status_update,
    "deployments.apps": lambda new, old: apps.validate_workload_status_update("Deployment", new, old),
    "replicasets.apps": lambda new, old: apps.validate_workload_status_update("ReplicaSet", new, old),
    "daemonsets.apps": lambda new, old: apps.validate_workload_status_update("DaemonSet", new, old),
    "jobs.batch": batch.validate_job_status_update,
    "poddisruptionbudgets.policy": other.validate_pdb_status_update,
}


def _key(rt: ResourceType) -> str:
    return rt.storage_alias or rt.key


def _job_create(job: dict) -> list[FieldError]:
    """A job is checked with its generated selector, which upstream adds before validating.

    ``defaults.job_prepare_for_create`` needs the uid, so when the caller
    validates before assigning one, the selector is generated on a copy with a
    stand-in uid.
    """
    from ..defaults.jobs import job_prepare_for_create

    if (job.get("metadata") or {}).get("uid") or (job.get("spec") or {}).get("manualSelector"):
        return batch.validate_job(job)
    pending = copy.deepcopy(job)
    pending["metadata"]["uid"] = _PENDING_UID
    job_prepare_for_create(pending)
    return batch.validate_job(pending)


def _custom(rt: ResourceType, obj: dict, old: dict | None = None) -> list[FieldError]:
    try:
        from .custom import validate_custom_resource
    except ImportError:  # written by another helper in parallel; nothing to check until it lands
        return []
    return list(validate_custom_resource(rt, obj) if old is None else validate_custom_resource(rt, obj, old=old))


def _crd(obj: dict, old: dict | None) -> list[FieldError]:
    try:
        from .crd import validate_crd
    except ImportError:  # written by another helper in parallel; nothing to check until it lands
        return []
    return list(validate_crd(obj, old=old))


def validate_create(rt: ResourceType, obj: dict) -> list[FieldError]:
    key = _key(rt)
    if rt.crd is not None:
        errs = _custom(rt, obj)
    elif key == CRD_KEY:
        errs = _crd(obj, None)
    elif key == "jobs.batch":
        errs = _job_create(obj)
    else:
        errs = _CREATE[key](obj) if key in _CREATE else []
    if errs:
        return errs
    return validate_generic_create(obj.get("metadata") or {}, rt.namespaced)


def validate_update(rt: ResourceType, new: dict, old: dict) -> list[FieldError]:
    key = _key(rt)
    errs = validate_generic_update(new.get("metadata") or {}, old.get("metadata") or {}, rt.namespaced)
    if rt.crd is not None:
        return errs + _custom(rt, new, old)
    if key == CRD_KEY:
        return errs + _crd(new, old)
    if key in _UPDATE:
        return errs + _UPDATE[key](new, old)
    return errs + validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def validate_status_update(rt: ResourceType, new: dict, old: dict) -> list[FieldError]:
    key = _key(rt)
    errs = validate_generic_update(new.get("metadata") or {}, old.get("metadata") or {}, rt.namespaced)
    if rt.crd is not None:
        return errs + _custom(rt, new, old)
    if key in _STATUS:
        return errs + _STATUS[key](new, old)
    return errs + validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
