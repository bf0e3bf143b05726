"""Printers for stateful sets, replication controllers and pod templates.

Ports of printStatefulSet, printReplicationController and printPodTemplate in
kubernetes/pkg/printers/internalversion/printers.go. The StatefulSet
descriptions upstream reads from apps/v1beta1 come from the served apps/v1
types here.
"""
from __future__ import annotations

from .cells import age, container_cells, format_labels, name
from .columns import CORE, age_column, column, doc, name_column, template_columns


def statefulset_columns() -> list[dict]:
    return [name_column(), column("Ready", description="Number of the pod with ready state"), age_column(),
            *template_columns("")[:2]]


def statefulset_cells(sts: dict, now_us: int) -> list:
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    template = (spec.get("template") or {}).get("spec") or {}
    return [name(sts), f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}", age(sts, now_us),
            *container_cells(template)]


def replicationcontroller_columns() -> list[dict]:
    spec, status = CORE + "ReplicationControllerSpec", CORE + "ReplicationControllerStatus"
    return [name_column(), column("Desired", "integer", doc(spec, "replicas")),
            column("Current", "integer", doc(status, "replicas")),
            column("Ready", "integer", doc(status, "readyReplicas")), age_column(),
            *template_columns(doc(spec, "selector"))]


def replicationcontroller_cells(rc: dict, now_us: int) -> list:
    spec, status = rc.get("spec") or {}, rc.get("status") or {}
    template = (spec.get("template") or {}).get("spec") or {}
    return [name(rc), spec.get("replicas", 0), status.get("replicas", 0), status.get("readyReplicas", 0),
            age(rc, now_us), *container_cells(template), format_labels(spec.get("selector"))]


def podtemplate_columns() -> list[dict]:
    return [name_column(), column("Containers", description="Names of each container in the template."),
            column("Images", description="Images referenced by each container in the template."),
            column("Pod Labels", description="The labels for the pod template.")]


def podtemplate_cells(pt: dict, now_us: int) -> list:
    template = pt.get("template") or {}
    return [name(pt), *container_cells(template.get("spec")), format_labels((template.get("metadata") or {})
                                                                            .get("labels"))]
