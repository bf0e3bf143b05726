"""DRA on the node: claims prepared by their drivers before containers start, over the API.

On a real node a DRA driver's kubelet plugin registers over a socket and the
kubelet's DRA manager calls its ``NodePrepareResources`` for the claims of a
pod before the sandbox starts (``NodeUnprepareResources`` when no pod on the
node uses a claim any more); the answer carries CDI device IDs, which the
container runtime resolves through the driver's CDI spec (environment,
device nodes, mounts). Here the same handshake runs over the API
(docs/architecture.md, "How a DRA driver meets the node agent"):

* registration: the driver lists the driver names it serves on a node in the
  node annotation ``gpulab.dev/dra-drivers`` (comma-separated);
* prepare request: the node agent annotates each allocated claim a pod on its
  node uses with ``gpulab.dev/dra-prepare: <node>``;
* answer: every driver named in the claim's allocation writes the claim
  annotation ``prepared.dra.gpulab.dev/<driver>``, JSON
  ``{"devices": [{"request": "gpu", "pool": "...", "device": "...",
  "cdiDeviceIDs": ["<vendor>/<class>=<id>"], "response": {...}, "programs": {...}}],
  "error": "<NodePrepareResources' error>"}``, where ``response`` and
  ``programs`` have the schema of the device plugin's answer
  (:func:`gpulab.contract.parse_container_allocation`): what the device's CDI
  spec puts in the container (environment, device nodes, mounts) and what its
  mounted programs print;
* unprepare: once no pod on the node uses the claim, the node agent removes
  the request and the driver removes its answer.

A container gets the environment, files and CDI device IDs of the devices
its ``resources.claims`` name (a whole claim, or one request of it). Until
every claim is prepared the pod stays in ``ContainerCreating``; a failure is
the kubelet's Warning ``FailedPrepareDynamicResources`` with upstream's text
(pkg/kubelet/cm/dra/manager.go): ``Failed to prepare dynamic resources:
prepare dynamic resources: DRA driver X is not registered`` or ``...:
NodePrepareResources failed for ResourceClaim <claim>: <error>``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..dra.claims import CLAIMS, ClaimNameError, claim_name, container_claims, is_reserved_for, pod_claims
from ..errors import ApiError
from ..objects import clone
from ...contract import Allocation, ContainerAllocation, ContainerAllocateResponse, parse_container_allocation

DRIVERS_ANNOTATION = "gpulab.dev/dra-drivers"
PREPARE_ANNOTATION = "gpulab.dev/dra-prepare"
PREPARED_PREFIX = "prepared.dra.gpulab.dev/"
FAILED_PREPARE = "FailedPrepareDynamicResources"
MANAGER = "kubelet"


@dataclass(frozen=True)
class Preparation:
    """Where a pod's claims stand: ready (with what each container gets), waiting, or failed (with the event)."""

    allocation: Allocation | None = None
    error: str = ""


def registered_drivers(node: dict) -> set[str]:
    raw = ((node.get("metadata") or {}).get("annotations") or {}).get(DRIVERS_ANNOTATION, "")
    return {d.strip() for d in raw.split(",") if d.strip()}


def _failed(reason: str) -> Preparation:
    return Preparation(error=f"Failed to prepare dynamic resources: prepare dynamic resources: {reason}")


def _results(claim: dict) -> list[dict]:
    return list((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or ())


def _claims(api, pod: dict) -> dict[str, dict] | None:
    """The pod's claims by pod claim name (None while one is missing or not reserved for the pod)."""
    out = {}
    for pod_claim in pod_claims(pod):
        try:
            name, _ = claim_name(pod, pod_claim)
        except ClaimNameError:
            return None
        if name is None:
            continue
        claim = api.try_get(CLAIMS, name, pod["metadata"].get("namespace"))
        if claim is None or not is_reserved_for(pod, claim):
            return None
        out[pod_claim["name"]] = claim
    return out


def _request_prepare(api, claim: dict, node_name: str) -> dict:
    annotations = claim["metadata"].get("annotations") or {}
    if annotations.get(PREPARE_ANNOTATION) == node_name:
        return claim
    meta = claim["metadata"]
    return api.patch(CLAIMS, meta["name"], {"metadata": {"annotations": {PREPARE_ANNOTATION: node_name}}}, "merge",
                     meta.get("namespace"), manager=MANAGER)


def prepare(api, pod: dict, node: dict) -> Preparation:
    """PrepareDynamicResources for one pod on ``node``."""
    claims = _claims(api, pod)
    if claims is None:
        return Preparation()
    drivers = registered_drivers(node)
    answers: dict[str, list[dict]] = {}  # pod claim name -> the prepared devices of every driver
    for pod_claim_name, claim in claims.items():
        needed = sorted({r.get("driver", "") for r in _results(claim)})
        for driver in needed:
            if driver not in drivers:
                return _failed(f"DRA driver {driver} is not registered")
        claim = _request_prepare(api, claim, node["metadata"]["name"])
        annotations = claim["metadata"].get("annotations") or {}
        devices: list[dict] = []
        for driver in needed:
            raw = annotations.get(PREPARED_PREFIX + driver)
            if raw is None:
                return Preparation()
            try:
                answer = json.loads(raw)
            except ValueError as exc:
                answer = {"error": f"invalid {PREPARED_PREFIX + driver} annotation: {exc}"}
            if answer.get("error"):
                return _failed(f"NodePrepareResources failed for ResourceClaim {claim['metadata']['name']}: "
                               f"{answer['error']}")
            devices.extend(answer.get("devices") or ())
        answers[pod_claim_name] = devices
    return Preparation(allocation=_per_container(pod, answers))


def _per_container(pod: dict, answers: dict[str, list[dict]]) -> Allocation:
    containers = {}
    spec = pod.get("spec") or {}
    for container in list(spec.get("initContainers") or ()) + list(spec.get("containers") or ()):
        given = ContainerAllocation()
        for claim, request in container_claims(container):
            for dev in answers.get(claim, ()):
                if request and dev.get("request", "").split("/")[0] != request:
                    continue
                cdi = ContainerAllocation(response=ContainerAllocateResponse(
                    cdi_devices=tuple(dev.get("cdiDeviceIDs") or ())))
                given = given.merged(parse_container_allocation(dev)).merged(cdi)
        if given != ContainerAllocation():
            containers[container["name"]] = given
    return Allocation(containers)


def unprepare(api, pod: dict, node_name: str, still_used: set[str]) -> None:
    """After the pod stopped: withdraw the prepare request of each of its claims no other pod here uses."""
    ns = pod["metadata"].get("namespace")
    for name in sorted(claim_names(pod) - still_used):
        claim = api.try_get(CLAIMS, name, ns)
        if claim is None or (claim["metadata"].get("annotations") or {}).get(PREPARE_ANNOTATION) != node_name:
            continue
        updated = clone(claim)
        updated["metadata"]["annotations"].pop(PREPARE_ANNOTATION, None)
        try:
            api.update(CLAIMS, updated, ns, manager=MANAGER)
        except ApiError:
            pass  # gone or changed meanwhile: the next stop of a pod using it tries again


def claim_names(pod: dict) -> set[str]:
    """Every claim name a pod refers to (its own and its template claims)."""
    names = {c["resourceClaimName"] for c in pod_claims(pod) if c.get("resourceClaimName")}
    names |= {s["resourceClaimName"] for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
              if s.get("resourceClaimName")}
    return names


def merge(first: Allocation | None, second: Allocation | None) -> Allocation | None:
    """A container's device plugin allocation and its DRA devices together."""
    if first is None or second is None:
        return first or second
    containers = dict(first.containers)
    for name, extra in second.containers.items():
        containers[name] = containers.get(name, ContainerAllocation()).merged(extra)
    return Allocation(containers, first.error or second.error)
