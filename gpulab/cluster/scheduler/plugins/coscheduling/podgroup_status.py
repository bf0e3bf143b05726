"""The scheduler-plugins controller's PodGroup reconciler (pkg/controllers/podgroup_controller.go).

Keeps ``status.phase`` and the ``running``/``succeeded``/``failed`` counts of
each PodGroup from the pods labelled ``scheduling.x-k8s.io/pod-group``:
``""`` becomes ``Pending``; ``Pending`` becomes ``Scheduling`` (and records
``occupiedBy``, the owners of the first pod) once ``minMember`` pods exist;
after that the counts are refreshed and the phase is ``Pending`` below
``minMember`` pods, ``Scheduling`` while fewer than ``minMember`` are running
or succeeded, ``Running`` from then on, ``Failed`` when a pod failed and
failed+running+succeeded reach ``minMember``, ``Finished`` when ``minMember``
succeeded; ``Finished`` and ``Failed`` are final. As upstream, pods are
listed by label in every namespace, and zero counts are omitted (``omitempty``).
The v1alpha1 API has no ``scheduled`` count.
"""
from __future__ import annotations

from ....controllers.base import Controller
from ...podinfo import POD_GROUP_LABEL
from .plugin import PODGROUPS

MANAGER = "scheduler-plugins-controller"


class PodGroupStatusController(Controller):
    name = "scheduler-plugins-controller"
    watches = (PODGROUPS, "pods")

    def keys_for(self, key: str, obj: dict):
        meta = obj["metadata"]
        if key == "pods":
            group = (meta.get("labels") or {}).get(POD_GROUP_LABEL)
            return [(meta.get("namespace", ""), group)] if group else []
        return [(meta.get("namespace", ""), meta["name"])]

    async def reconcile(self, work_key) -> float | None:
        namespace, name = work_key
        pg = self.api.try_get(PODGROUPS, name, namespace)
        if pg is None:
            return None
        status = dict(pg.get("status") or {})
        phase = status.get("phase", "")
        if phase in ("Finished", "Failed"):
            return None
        pods = self.api.list("pods", label_selector=f"{POD_GROUP_LABEL}={name}")
        new = next_status(status, int((pg.get("spec") or {}).get("minMember") or 0), pods)
        if new != status:
            patch = {k: new.get(k) for k in set(status) | set(new) if status.get(k) != new.get(k)}
            self.api.patch(PODGROUPS, name, {"status": patch}, "merge", namespace, subresource="status",
                           manager=MANAGER)
        return None


def next_status(status: dict, min_member: int, pods: list[dict]) -> dict:
    """The reconciled status (the switch in PodGroupReconciler.Reconcile)."""
    new = dict(status)
    phase = status.get("phase", "")
    if phase == "":
        new["phase"] = "Pending"
    elif phase == "Pending":
        if len(pods) >= min_member:
            new["phase"] = "Scheduling"
            owners = sorted(f"{pods[0]['metadata'].get('namespace', '')}/{ref.get('name')}"
                            for ref in pods[0]["metadata"].get("ownerReferences") or ())
            if owners:
                new["occupiedBy"] = ",".join(owners)
    else:
        phases = [(p.get("status") or {}).get("phase") for p in pods]
        running, succeeded, failed = phases.count("Running"), phases.count("Succeeded"), phases.count("Failed")
        for field, value in (("running", running), ("succeeded", succeeded), ("failed", failed)):
            if value:
                new[field] = value
            else:
                new.pop(field, None)
        if len(pods) < min_member:
            new["phase"] = "Pending"
        else:
            new["phase"] = "Running" if succeeded + running >= min_member else "Scheduling"
            if failed and failed + running + succeeded >= min_member:
                new["phase"] = "Failed"
            if succeeded >= min_member:
                new["phase"] = "Finished"
    return new
