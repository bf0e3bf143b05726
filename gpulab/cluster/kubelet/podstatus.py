"""The pod status the kubelet reports: its phase and conditions, from its containers' statuses.

Ports of pkg/kubelet/kubelet_pods.go (getPhase, generateAPIPodStatus), pkg/kubelet/status/generate.go
(the Initialized, Ready, ContainersReady and PodReadyToStartContainers conditions, v1.36 with
observedGeneration) and pkg/kubelet/status/status_manager.go (lastTransitionTime kept while a
condition's status does not change; conditions not owned by the kubelet kept first). The QoS class
is the one kube-apiserver computed when the pod was created. Pure functions of API-shaped dicts.
"""
from __future__ import annotations

# pkg/kubelet/types/pod_status.go PodConditionByKubelet
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
TERMINAL_PHASES = ("Succeeded", "Failed")


def is_sidecar(container: dict) -> bool:
    """A restartable init container (``restartPolicy: Always`` on an init container)."""
    return container.get("restartPolicy") == "Always"


def _state(status: dict) -> dict:
    return status.get("state") or {}


def get_phase(pod: dict, statuses: list[dict], pod_is_terminal: bool) -> str:
    """getPhase: the phase from all container statuses (init and regular)."""
    spec = pod.get("spec") or {}
    by_name = {s["name"]: s for s in statuses}
    pending_init = failed_init = 0
    for c in spec.get("initContainers") or ():
        if is_sidecar(c):
            continue
        s = by_name.get(c["name"])
        if s is None:
            pending_init += 1
            continue
        st = _state(s)
        if "running" in st:
            pending_init += 1
        elif "terminated" in st:
            if st["terminated"].get("exitCode", 0) != 0:
                failed_init += 1
        elif "waiting" in st:
            last = (s.get("lastState") or {}).get("terminated")
            if last is not None:
                if last.get("exitCode", 0) != 0:
                    failed_init += 1
            else:
                pending_init += 1
        else:
            pending_init += 1
    unknown = running = waiting = stopped = succeeded = 0
    for c in spec.get("initContainers") or ():
        if not is_sidecar(c):
            continue
        s = by_name.get(c["name"])
        if s is None:
            unknown += 1
            continue
        st = _state(s)
        if "running" in st:
            if not s.get("started"):
                pending_init += 1
            running += 1
        elif "waiting" in st and (s.get("lastState") or {}).get("terminated") is None:
            pending_init += 1
            waiting += 1
        elif "terminated" not in st and "waiting" not in st:
            pending_init += 1
            unknown += 1
    for c in spec.get("containers") or ():
        s = by_name.get(c["name"])
        if s is None:
            unknown += 1
            continue
        st = _state(s)
        if "running" in st:
            running += 1
        elif "terminated" in st:
            stopped += 1
            if st["terminated"].get("exitCode", 0) == 0:
                succeeded += 1
        elif "waiting" in st:
            if (s.get("lastState") or {}).get("terminated") is not None:
                stopped += 1
            else:
                waiting += 1
        else:
            unknown += 1
    restart = spec.get("restartPolicy", "Always")
    if failed_init > 0 and restart == "Never":
        return "Failed"
    regular_started = any(("running" in _state(by_name[c["name"]]) or "terminated" in _state(by_name[c["name"]]))
                          for c in spec.get("containers") or () if c["name"] in by_name)
    if (pending_init > 0 and not regular_started) or waiting > 0:
        return "Pending"
    if running > 0 and unknown == 0:
        return "Running"
    if running == 0 and stopped > 0 and unknown == 0:
        if pod_is_terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if restart == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if restart == "Never":
            return "Failed"
        return "Running"
    return "Pending"


def _names(names: list[str]) -> str:
    """Go's %s of a []string: ``[a b]``."""
    return "[" + " ".join(names) + "]"


def _initialized(pod: dict, statuses: dict[str, dict], phase: str) -> dict:
    spec = pod.get("spec") or {}
    inits = spec.get("initContainers") or ()
    unknown, incomplete = [], []
    for c in inits:
        s = statuses.get(c["name"])
        if s is None:
            unknown.append(c["name"])
        elif (not s.get("started")) if is_sidecar(c) else (not s.get("ready")):
            incomplete.append(c["name"])
    if phase == "Succeeded" and not unknown:
        return {"type": "Initialized", "status": "True", "reason": "PodCompleted"}
    if any("running" in _state(statuses[c["name"]]) or "terminated" in _state(statuses[c["name"]])
           or (statuses[c["name"]].get("lastState") or {}).get("terminated")
           for c in spec.get("containers") or () if c["name"] in statuses):
        return {"type": "Initialized", "status": "True"}
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_names(unknown)}")
    if incomplete:
        messages.append(f"containers with incomplete status: {_names(incomplete)}")
    if messages:
        return {"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized",
                "message": ", ".join(messages)}
    return {"type": "Initialized", "status": "True"}


def _containers_ready(pod: dict, statuses: dict[str, dict], phase: str) -> dict:
    spec = pod.get("spec") or {}
    unknown, unready = [], []
    for c in [c for c in spec.get("initContainers") or () if is_sidecar(c)] + list(spec.get("containers") or ()):
        s = statuses.get(c["name"])
        if s is None:
            unknown.append(c["name"])
        elif not s.get("ready"):
            unready.append(c["name"])
    if phase == "Succeeded" and not unknown:
        return {"type": "ContainersReady", "status": "False", "reason": "PodCompleted"}
    if phase == "Failed":
        return {"type": "ContainersReady", "status": "False", "reason": "PodFailed"}
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_names(unknown)}")
    if unready:
        messages.append(f"containers with unready status: {_names(unready)}")
    if messages:
        return {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady",
                "message": ", ".join(messages)}
    return {"type": "ContainersReady", "status": "True"}


def _ready(pod: dict, conditions: list[dict], containers_ready: dict) -> dict:
    if containers_ready["status"] != "True":
        return {**containers_ready, "type": "Ready"}
    unready = []
    for gate in (pod.get("spec") or {}).get("readinessGates") or ():
        kind = gate.get("conditionType")
        cond = next((c for c in conditions if c.get("type") == kind), None)
        if cond is None:
            unready.append(f'corresponding condition of pod readiness gate "{kind}" does not exist.')
        elif cond.get("status") != "True":
            unready.append(f'the status of pod readiness gate "{kind}" is not "True", but {cond.get("status")}')
    if unready:
        return {"type": "Ready", "status": "False", "reason": "ReadinessGatesNotReady", "message": ", ".join(unready)}
    return {"type": "Ready", "status": "True"}


def conditions(pod: dict, old: dict, phase: str, statuses: list[dict], sandbox_ready: bool, now: str) -> list[dict]:
    """Conditions not owned by the kubelet (kept as they were), then the kubelet's five, in upstream order."""
    by_name = {s["name"]: s for s in statuses}
    kept = [c for c in old.get("conditions") or () if c.get("type") not in KUBELET_CONDITIONS]
    containers_ready = _containers_ready(pod, by_name, phase)
    generated = [
        {"type": "PodReadyToStartContainers", "status": "True" if sandbox_ready else "False"},
        _initialized(pod, by_name, phase),
        _ready(pod, kept, containers_ready),
        containers_ready,
        {"type": "PodScheduled", "status": "True"},
    ]
    generation = (pod.get("metadata") or {}).get("generation")
    previous = {c.get("type"): c for c in old.get("conditions") or ()}
    out = list(kept)
    for cond in generated:
        before = previous.get(cond["type"])
        stamped = {"type": cond["type"]}
        if generation is not None:
            stamped["observedGeneration"] = generation
        stamped["status"] = cond["status"]
        stamped["lastProbeTime"] = None
        stamped["lastTransitionTime"] = before.get("lastTransitionTime") \
            if before is not None and before.get("status") == cond["status"] and before.get("lastTransitionTime") \
            else now
        for key in ("reason", "message"):
            if cond.get(key):
                stamped[key] = cond[key]
        out.append(stamped)
    return out
