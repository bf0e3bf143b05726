"""The pod printer: ``NAME READY STATUS RESTARTS AGE`` (+ ``IP NODE NOMINATED NODE READINESS GATES``).

A port of printPod in kubernetes/pkg/printers/internalversion/printers.go.
STATUS is not the pod's phase: it is ``status.reason`` if set (such as
``OutOfexample.com/gpu`` or ``UnexpectedAdmissionError``), ``SchedulingGated``
while gated, then the first init container that has not finished
(``Init:1/2``, ``Init:ErrImagePull``, ``Init:Error``), then the last
regular container that is waiting or terminated (``ContainerCreating``,
``CrashLoopBackOff``, ``Completed``, ``OOMKilled``...), and finally
``Terminating`` / ``Unknown`` for a pod being deleted.
"""
from __future__ import annotations

from .cells import age, duration, name, time_of
from .columns import CORE, META, column, doc

SCHEDULING_GATED = "SchedulingGated"  # apiv1.PodReasonSchedulingGated
NODE_UNREACHABLE = "NodeLost"  # pkg/util/node.NodeUnreachablePodReason
_TERMINAL_PHASES = ("Succeeded", "Failed")
_ROW_CONDITIONS = {
    "Succeeded": [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}],
    "Failed": [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}],
}


def columns() -> list[dict]:
    return [
        column("Name", "string", doc(META, "name"), format_="name"),
        column("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
        column("Status", description="The aggregate status of the containers in this pod."),
        column("Restarts", description="The number of times the containers in this pod have been restarted "
                                       "and when the last container in this pod has restarted."),
        column("Age", description=doc(META, "creationTimestamp")),
        column("IP", description=doc(CORE + "PodStatus", "podIP"), priority=1),
        column("Node", description=doc(CORE + "PodSpec", "nodeName"), priority=1),
        column("Nominated Node", description=doc(CORE + "PodStatus", "nominatedNodeName"), priority=1),
        column("Readiness Gates", description=doc(CORE + "PodSpec", "readinessGates"), priority=1),
    ]


def row_conditions(pod: dict) -> list[dict]:
    """metav1.RowCompleted for a pod that has finished, as printPod sets it."""
    return _ROW_CONDITIONS.get((pod.get("status") or {}).get("phase"), [])


def _is_true(conditions: list, type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conditions)


def _is_restartable(container: dict | None) -> bool:
    """podutil.IsRestartableInitContainer: a sidecar (``restartPolicy: Always``)."""
    return container is not None and container.get("restartPolicy") == "Always"


def _later(current: int | None, status: dict) -> int | None:
    """The later of ``current`` and the container's last termination's finishedAt."""
    terminated = (status.get("lastState") or {}).get("terminated")
    if terminated is None:
        return current
    finished = time_of(terminated.get("finishedAt"))
    if finished is None or (current is not None and finished <= current):
        return current
    return finished


def _terminated_reason(terminated: dict, prefix: str = "") -> str:
    if terminated.get("reason"):
        return prefix + terminated["reason"]
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


def _readiness_gates(spec: dict, conditions: list) -> str:
    gates = spec.get("readinessGates") or []
    if not gates:
        return "<none>"
    met = 0
    for gate in gates:
        found = next((c for c in conditions if c.get("type") == gate.get("conditionType")), None)
        if found is not None and found.get("status") == "True":
            met += 1
    return f"{met}/{len(gates)}"


def cells(pod: dict, now_us: int) -> list:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    conditions = status.get("conditions") or []
    phase = status.get("phase", "")
    reason = status.get("reason") or phase
    if any(c.get("type") == "PodScheduled" and c.get("reason") == SCHEDULING_GATED for c in conditions):
        reason = SCHEDULING_GATED

    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total = len(spec.get("containers") or []) + sum(
        1 for c in spec.get("initContainers") or [] if _is_restartable(c))
    ready = restarts = sidecar_restarts = 0
    last_restart = last_sidecar_restart = None

    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += cs.get("restartCount", 0)
        last_restart = _later(last_restart, cs)
        sidecar = _is_restartable(init_specs.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += cs.get("restartCount", 0)
            last_sidecar_restart = _later(last_sidecar_restart, cs)
        state = cs.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if sidecar and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if terminated is not None:
            reason = _terminated_reason(terminated, "Init:")
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        initializing = True
        break

    if not initializing or _is_true(conditions, "Initialized"):
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += cs.get("restartCount", 0)
            last_restart = _later(last_restart, cs)
            state = cs.get("state") or {}
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None:
                reason = _terminated_reason(terminated)
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _is_true(conditions, "Ready") else "NotReady"

    deleting = (pod.get("metadata") or {}).get("deletionTimestamp") is not None
    if deleting and status.get("reason") == NODE_UNREACHABLE:
        reason = "Unknown"
    elif deleting and phase not in _TERMINAL_PHASES:
        reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_cell = f"{restarts} ({duration(now_us - last_restart)} ago)"

    pod_ips = status.get("podIPs") or ([{"ip": status["podIP"]}] if status.get("podIP") else [])
    return [name(pod), f"{ready}/{total}", reason, restarts_cell, age(pod, now_us),
            (pod_ips[0].get("ip") if pod_ips else "") or "<none>",
            spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>",
            _readiness_gates(spec, conditions)]
