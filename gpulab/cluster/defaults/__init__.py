"""Defaulting and admission mutations of kube-apiserver for the built-in kinds.

``apply_defaults`` runs on every create and update, like the scheme defaulters
run on every decode (pkg/apis/*/v1/defaults.go and zz_generated.defaults.go).
``admit_create`` runs the mutating admission plugins that change a new object
(ServiceAccount, Priority, DefaultTolerationSeconds for pods; Priority for
PriorityClasses). ``job_prepare_for_create`` and ``prepare_for_update`` are the
parts of the registry strategies' PrepareForCreate/PrepareForUpdate that need
the object's uid or its previous version.
"""
from __future__ import annotations

from typing import Callable

from ..registry import ResourceType
from . import admission, core, pods, workloads
from .jobs import job_prepare_for_create
from .workloads import DAEMONSET_TEMPLATE_GENERATION

__all__ = ["apply_defaults", "admit_create", "job_prepare_for_create", "prepare_for_update"]

_DEFAULTERS: dict[str, Callable[[ResourceType, dict], None]] = {
    "pods": pods.default_pod,
    "services": core.default_service,
    "secrets": core.default_secret,
    "namespaces": core.default_namespace,
    "nodes": core.default_node,
    "deployments.apps": workloads.default_deployment,
    "replicasets.apps": workloads.default_replicaset,
    "daemonsets.apps": workloads.default_daemonset,
    "jobs.batch": workloads.default_job,
    "priorityclasses.scheduling.k8s.io": workloads.default_priority_class,
}


def apply_defaults(rt: ResourceType, obj: dict) -> None:
    """Fill in defaults in place (a fresh copy the caller owns); custom resources are left alone.

    Quantities are canonicalized here as the decode/encode round trip does; an
    unparsable one raises the 400 ``ApiError`` decoding would.
    """
    if rt.crd is not None:
        return
    defaulter = _DEFAULTERS.get(rt.storage_alias or rt.key)
    if defaulter is not None:
        defaulter(rt, obj)


def admit_create(rt: ResourceType, obj: dict, lookup: admission.Lookup,
                 list_objects: admission.ListObjects | None = None) -> None:
    """Mutating admission on create; raises ``ApiError`` (403 Forbidden) on a rejection.

    ``lookup(key, name)`` returns a cluster-scoped object or None and
    ``lookup(key, name, namespace)`` a namespaced one. ``list_objects(key)``
    (optional) lists a resource; without it no PriorityClass counts as the
    global default.
    """
    key = rt.storage_alias or rt.key
    if key == "pods":
        admission.admit_service_account(rt, obj, lookup)
        admission.admit_priority(rt, obj, lookup, list_objects)
        admission.admit_default_toleration_seconds(obj)
    elif key == "priorityclasses.scheduling.k8s.io":
        admission.admit_priority_class(rt, obj, list_objects)


def admit_update(rt: ResourceType, obj: dict) -> None:
    """Mutating admission on update: DefaultTolerationSeconds runs on Create and Update
    (plugin/pkg/admission/defaulttolerationseconds), so a patch that drops its tolerations gets them back."""
    if (rt.storage_alias or rt.key) == "pods":
        admission.admit_default_toleration_seconds(obj)


def prepare_for_update(rt: ResourceType, new: dict, old: dict) -> None:
    """The DaemonSet strategy's PrepareForUpdate: keep templateGeneration, bump it when the template changes."""
    if (rt.storage_alias or rt.key) != "daemonsets.apps":
        return
    old_gen = int(((old.get("metadata") or {}).get("annotations") or {}).get(DAEMONSET_TEMPLATE_GENERATION, "1"))
    changed = ((new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"))
    annotations = new.setdefault("metadata", {}).get("annotations") or {}
    annotations[DAEMONSET_TEMPLATE_GENERATION] = str(old_gen + 1 if changed else old_gen)
    new["metadata"]["annotations"] = annotations
