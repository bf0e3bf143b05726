"""``meta.k8s.io/v1`` Table responses: what ``kubectl get`` prints is decided here.

kubectl asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and prints
the columns and cells the server sends, hiding priority-1 columns unless
``-o wide``. Built-in kinds use the ports of kube-apiserver's
pkg/printers/internalversion handlers (always generated wide, as
pkg/printers/storage does); custom resources use apiextensions-apiserver's
printer-column convertor; any other kind gets the DefaultTableConvertor's
``Name``/``Created At``. The caller fills ``metadata`` (resourceVersion,
continue); ``includeObject`` is applied as handlers/response.go's asTable does.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from ..errors import bad_request
from ..registry import ResourceType
from . import core, pods, workloads
from .cells import to_micros
from .custom import CustomResourcePrinter, default_cells, default_columns

__all__ = ["table"]


@dataclass(frozen=True)
class _Printer:
    columns: Callable[[], list[dict]]
    cells: Callable[[dict, int], list]
    conditions: Callable[[dict], list[dict]] = lambda obj: []


_BUILTIN: dict[tuple[str, str], _Printer] = {
    ("", "Pod"): _Printer(pods.columns, pods.cells, pods.row_conditions),
    ("", "Node"): _Printer(core.node_columns, core.node_cells),
    ("", "Event"): _Printer(core.event_columns, core.event_cells),
    ("events.k8s.io", "Event"): _Printer(core.event_columns, core.event_cells),
    ("", "Namespace"): _Printer(core.namespace_columns, core.namespace_cells),
    ("", "ConfigMap"): _Printer(core.configmap_columns, core.configmap_cells),
    ("", "Secret"): _Printer(core.secret_columns, core.secret_cells),
    ("", "ServiceAccount"): _Printer(core.serviceaccount_columns, core.serviceaccount_cells),
    ("", "Service"): _Printer(core.service_columns, core.service_cells),
    ("apps", "Deployment"): _Printer(workloads.deployment_columns, workloads.deployment_cells),
    ("apps", "ReplicaSet"): _Printer(workloads.replicaset_columns, workloads.replicaset_cells),
    ("apps", "DaemonSet"): _Printer(workloads.daemonset_columns, workloads.daemonset_cells),
    ("apps", "ControllerRevision"): _Printer(workloads.controllerrevision_columns,
                                             workloads.controllerrevision_cells),
    ("batch", "Job"): _Printer(workloads.job_columns, workloads.job_cells),
    ("coordination.k8s.io", "Lease"): _Printer(workloads.lease_columns, workloads.lease_cells),
    ("policy", "PodDisruptionBudget"): _Printer(workloads.pdb_columns, workloads.pdb_cells),
    ("scheduling.k8s.io", "PriorityClass"): _Printer(workloads.priorityclass_columns,
                                                     workloads.priorityclass_cells),
}
_DEFAULT = _Printer(default_columns, default_cells)


@functools.lru_cache(maxsize=None)
def _columns(group: str, kind: str) -> tuple[dict, ...]:
    return tuple(_BUILTIN.get((group, kind), _DEFAULT).columns())


def _row_object(obj: dict, include_object: str):
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table(rt: ResourceType, objects: list[dict], *, now: float, include_object: str = "Metadata") -> dict:
    """The Table kube-apiserver returns for ``objects`` of resource ``rt`` at wall-clock time ``now``.

    ``include_object`` is the request's ``includeObject`` (``None``, ``Metadata``
    -- also for ``""`` -- or ``Object``); any other value is a 400 as upstream.
    Cells are plain JSON values; a ``None`` cell is JSON null (kubectl leaves it blank).
    """
    include_object = include_object or "Metadata"
    if include_object not in ("None", "Metadata", "Object"):
        raise bad_request(f'unrecognized includeObject value: "{include_object}"')
    now_us = to_micros(now)
    if rt.crd is not None:
        custom = CustomResourcePrinter(rt.crd)
        columns, cells, conditions = custom.columns, custom.cells, _DEFAULT.conditions
    else:
        printer = _BUILTIN.get((rt.group, rt.kind), _DEFAULT)
        columns, cells, conditions = [dict(c) for c in _columns(rt.group, rt.kind)], printer.cells, printer.conditions
    rows = []
    for obj in objects:
        row: dict = {"cells": cells(obj, now_us)}
        if row_conditions := conditions(obj):
            row["conditions"] = [dict(c) for c in row_conditions]
        row["object"] = _row_object(obj, include_object)
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "columnDefinitions": columns,
            "rows": rows}
