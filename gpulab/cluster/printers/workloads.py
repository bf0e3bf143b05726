"""Printers for workload and scheduling kinds: deployments, replica sets, daemon sets, jobs,
controller revisions, pod disruption budgets, priority classes and leases.

Ports of printDeployment, printReplicaSet, printDaemonSet, printJob,
printControllerRevision, printPodDisruptionBudget, printPriorityClass and
printLease in kubernetes/pkg/printers/internalversion/printers.go. Upstream
reads several descriptions from deprecated groups (extensions/v1beta1,
apps/v1beta1); they come from the served apps/v1 types here.
"""
from __future__ import annotations

from .cells import (age, container_cells, duration, format_label_selector, format_labels, name, selector_string,
                    time_of)
from .columns import APPS, BATCH, age_column, column, doc, name_column, template_columns


def _template_spec(obj: dict) -> dict:
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


# --- deployments, replica sets, daemon sets ------------------------------------
def deployment_columns() -> list[dict]:
    status = APPS + "DeploymentStatus"
    return [name_column(), column("Ready", description="Number of the pod with ready state"),
            column("Up-to-date", description=doc(status, "updatedReplicas")),
            column("Available", description=doc(status, "availableReplicas")), age_column(),
            *template_columns(doc(APPS + "DeploymentSpec", "selector"))]


def deployment_cells(deploy: dict, now_us: int) -> list:
    spec, status = deploy.get("spec") or {}, deploy.get("status") or {}
    try:
        selector = selector_string(spec.get("selector"))
    except ValueError:
        selector = "<invalid>"
    return [name(deploy), f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
            status.get("updatedReplicas", 0), status.get("availableReplicas", 0), age(deploy, now_us),
            *container_cells(_template_spec(deploy)), selector]


def replicaset_columns() -> list[dict]:
    spec, status = APPS + "ReplicaSetSpec", APPS + "ReplicaSetStatus"
    return [name_column(), column("Desired", "integer", doc(spec, "replicas")),
            column("Current", "integer", doc(status, "replicas")),
            column("Ready", "integer", doc(status, "readyReplicas")), age_column(),
            *template_columns(doc(spec, "selector"))]


def replicaset_cells(rs: dict, now_us: int) -> list:
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    return [name(rs), spec.get("replicas", 0), status.get("replicas", 0), status.get("readyReplicas", 0),
            age(rs, now_us), *container_cells(_template_spec(rs)), format_label_selector(spec.get("selector"))]


def daemonset_columns() -> list[dict]:
    status = APPS + "DaemonSetStatus"
    return [name_column(), column("Desired", "integer", doc(status, "desiredNumberScheduled")),
            column("Current", "integer", doc(status, "currentNumberScheduled")),
            column("Ready", "integer", doc(status, "numberReady")),
            column("Up-to-date", "integer", doc(status, "updatedNumberScheduled")),
            column("Available", "integer", doc(status, "numberAvailable")),
            column("Node Selector", description=doc("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
            age_column(), *template_columns(doc(APPS + "DaemonSetSpec", "selector"))]


def daemonset_cells(ds: dict, now_us: int) -> list:
    status = ds.get("status") or {}
    counts = [status.get(k, 0) for k in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady",
                                         "updatedNumberScheduled", "numberAvailable")]
    template = _template_spec(ds)
    return [name(ds), *counts, format_labels(template.get("nodeSelector")), age(ds, now_us),
            *container_cells(template), format_label_selector((ds.get("spec") or {}).get("selector"))]


# --- jobs ----------------------------------------------------------------------
def job_columns() -> list[dict]:
    return [name_column(), column("Status", description="Status of the job."),
            column("Completions", description=doc(BATCH + "JobStatus", "succeeded")),
            column("Duration", description="Time required to complete the job."), age_column(),
            *template_columns(doc(BATCH + "JobSpec", "selector"))]


def _has_job_condition(conditions: list, type_: str) -> bool:
    """hasJobCondition: the first condition of that type decides."""
    found = next((c for c in conditions if c.get("type") == type_), None)
    return found is not None and found.get("status") == "True"


def _job_status(job: dict) -> str:
    conditions = (job.get("status") or {}).get("conditions") or []
    if _has_job_condition(conditions, "Complete"):
        return "Complete"
    if _has_job_condition(conditions, "Failed"):
        return "Failed"
    if (job.get("metadata") or {}).get("deletionTimestamp") is not None:
        return "Terminating"
    for type_ in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if _has_job_condition(conditions, type_):
            return type_
    return "Running"


def job_cells(job: dict, now_us: int) -> list:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif (spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    started, finished = time_of(status.get("startTime")), time_of(status.get("completionTime"))
    took = "" if started is None else duration((now_us if finished is None else finished) - started)
    return [name(job), _job_status(job), completions, took, age(job, now_us),
            *container_cells(_template_spec(job)), format_label_selector(spec.get("selector"))]


# --- controller revisions, PDBs, priority classes, leases ---------------------------
def controllerrevision_columns() -> list[dict]:
    return [name_column(), column("Controller", description="Controller of the object"),
            column("Revision", description=doc(APPS + "ControllerRevision", "revision")), age_column()]


def controllerrevision_cells(rev: dict, now_us: int) -> list:
    owner = next((r for r in (rev.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")), None)
    controller = "<none>"
    if owner is not None:
        api_version = owner.get("apiVersion", "")
        group = api_version.rpartition("/")[0]
        kind = owner.get("kind", "")
        group_kind = f"{kind}.{group}" if group else kind
        # formatResourceName: an empty GroupKind prints the bare name
        controller = f"{group_kind.lower()}/{owner.get('name', '')}" if group_kind else owner.get("name", "")
    return [name(rev), controller, rev.get("revision", 0), age(rev, now_us)]


def pdb_columns() -> list[dict]:
    return [name_column(), column("Min Available", description="The minimum number of pods that must be available."),
            column("Max Unavailable", description="The maximum number of pods that may be unavailable."),
            column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
            age_column()]


def pdb_cells(pdb: dict, now_us: int) -> list:
    spec = pdb.get("spec") or {}
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [name(pdb), "N/A" if min_available is None else str(min_available),
            "N/A" if max_unavailable is None else str(max_unavailable),
            (pdb.get("status") or {}).get("disruptionsAllowed", 0), age(pdb, now_us)]


def priorityclass_columns() -> list[dict]:
    pc = "io.k8s.api.scheduling.v1.PriorityClass"
    return [name_column(), column("Value", "integer", doc(pc, "value")),
            column("Global-Default", "boolean", doc(pc, "globalDefault")), age_column(),
            column("PreemptionPolicy", description=doc(pc, "preemptionPolicy"))]


def priorityclass_cells(pc: dict, now_us: int) -> list:
    return [name(pc), pc.get("value", 0), bool(pc.get("globalDefault", False)), age(pc, now_us),
            pc.get("preemptionPolicy") or ""]


def lease_columns() -> list[dict]:
    return [name_column(), column("Holder", description=doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
            age_column()]


def lease_cells(lease: dict, now_us: int) -> list:
    return [name(lease), (lease.get("spec") or {}).get("holderIdentity") or "", age(lease, now_us)]
