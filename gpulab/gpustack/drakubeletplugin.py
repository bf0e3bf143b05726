"""The DRA driver's kubelet plugin on one node, played where its DaemonSet's pod runs: registration,
ResourceSlices, and answers to the node agent's prepare requests, all through the API.

The handshake with the node agent is the cluster's (docs/architecture.md, "How a DRA driver meets the node
agent"): the driver names itself in the node annotation ``gpulab.dev/dra-drivers`` (as the real plugin
registers with the kubelet over its socket), answers a claim annotated ``gpulab.dev/dra-prepare: <node>``
with ``prepared.dra.gpulab.dev/gpu.nvidia.com`` (:func:`.dra.prepare`), and withdraws the answer once the
request is gone (``NodeUnprepareResources``). The slices are published as the kubeletplugin helper's
ResourceSlice controller does (k8s.io/dynamic-resource-allocation/resourceslice): ``generateName``
``<node>-gpu.nvidia.com-``, owned by the Node, and a new pool generation whenever their content changes.
When the plugin's pod goes, its slices and registration go with it.
"""
from __future__ import annotations

import json
import logging

from .. import kubeclient
from ..kubeclient import ApiException, Resource
from . import dra
from .pods import meta, running

log = logging.getLogger("gpulab.gpustack.dra")

RESOURCECLAIMS = Resource("resource.k8s.io/v1", "resourceclaims")
RESOURCESLICES = Resource("resource.k8s.io/v1", "resourceslices", namespaced=False)
DRIVERS_ANNOTATION = "gpulab.dev/dra-drivers"
PREPARE_ANNOTATION = "gpulab.dev/dra-prepare"
PREPARED_ANNOTATION = "prepared.dra.gpulab.dev/" + dra.DRIVER
COMPONENT_LABEL = "nvidia-dra-driver-gpu-component"
KUBELET_PLUGIN = "kubelet-plugin"
# The GPU Operator's copy of the plugin (a GPUCluster's, manifests/state-dra-driver/0500_daemonset.yaml).
OPERATOR_PLUGIN_APP = "nvidia-dra-driver-kubelet-plugin"
FEATURE_GATES_ENV = "FEATURE_GATES"


def plugin_pod(pods_here: list[dict]) -> dict | None:
    """The kubelet-plugin pod running on the node, if any: the chart's or the GPU Operator's."""
    def is_plugin(labels: dict[str, str]) -> bool:
        return labels.get(COMPONENT_LABEL) == KUBELET_PLUGIN or labels.get("app") == OPERATOR_PLUGIN_APP

    return next((p for p in pods_here if running(p) and is_plugin(meta(p).get("labels") or {})), None)


def feature_gates(pod: dict) -> dict[str, bool]:
    """The plugin container's ``FEATURE_GATES`` (``Gate=true,...``), as the chart renders ``featureGates``."""
    for container in (pod.get("spec") or {}).get("containers") or ():
        for env in container.get("env") or ():
            if env.get("name") == FEATURE_GATES_ENV:
                pairs = (item.split("=", 1) for item in (env.get("value") or "").split(",") if "=" in item)
                return {k.strip(): v.strip().lower() == "true" for k, v in pairs}
    return {}


def registered(notes: dict[str, str], present: bool) -> None:
    """Add or remove this driver in the node's registration annotation, keeping other drivers'."""
    drivers = [d for d in (notes.get(DRIVERS_ANNOTATION) or "").split(",") if d.strip() and d != dra.DRIVER]
    if present:
        drivers.append(dra.DRIVER)
    if drivers:
        notes[DRIVERS_ANNOTATION] = ",".join(sorted(drivers))
    else:
        notes.pop(DRIVERS_ANNOTATION, None)


def claim_node(claim: dict) -> str | None:
    """The node whose plugin a claim concerns: the one asked to prepare it, else the pool of our devices."""
    notes = meta(claim).get("annotations") or {}
    if notes.get(PREPARE_ANNOTATION):
        return notes[PREPARE_ANNOTATION]
    return next((r.get("pool") for r in _results(claim) if r.get("driver") == dra.DRIVER), None)


def _results(claim: dict) -> list[dict]:
    return list((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or ())


class KubeletPlugin:
    """What the plugins on every node have published, so an unchanged node costs no request."""

    def __init__(self, kube: kubeclient.Kube):
        self.kube = kube
        self._published: dict[str, str] = {}   # node -> the JSON of the slice specs last published

    def step(self, node: dict, pods_here: list[dict], gpus, driver_version: str | None, notes: dict[str, str],
             claims: list[dict]) -> None:
        name = meta(node)["name"]
        pod = plugin_pod(pods_here) if gpus and driver_version else None
        registered(notes, pod is not None)
        if pod is None:
            self.publish(node, [])
            return
        specs = dra.slice_specs(gpus.model, gpus.count, name, driver_version,
                                dynamic_mig=feature_gates(pod).get(dra.DYNAMIC_MIG_GATE, False))
        self.publish(node, specs)
        for claim in claims:
            self._answer(claim, name, gpus, driver_version)

    # --- ResourceSlices -----------------------------------------------------------------------
    def publish(self, node: dict, specs: list[dict]) -> None:
        name = meta(node)["name"]
        wanted = json.dumps(specs, sort_keys=True)
        if self._published.get(name) == wanted:
            return
        existing = sorted(self.kube.list(RESOURCESLICES, field_selector=f"spec.nodeName={name}").get("items") or (),
                          key=lambda s: meta(s)["name"])
        ours = [s for s in existing if (s.get("spec") or {}).get("driver") == dra.DRIVER]
        current = [{**s["spec"], "pool": {**s["spec"]["pool"], "generation": 0}} for s in ours]
        if sorted(json.dumps(c, sort_keys=True) for c in current) != \
                sorted(json.dumps({**s, "pool": {**s["pool"], "generation": 0}}, sort_keys=True) for s in specs):
            generation = max((int(s["spec"]["pool"].get("generation") or 0) for s in ours), default=0) + 1
            for old in ours:
                self.kube.delete(RESOURCESLICES, meta(old)["name"])
            owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta(node).get("uid", ""),
                     "controller": True}
            for spec in specs:
                body = {"apiVersion": dra.API_VERSION, "kind": "ResourceSlice",
                        "metadata": {"generateName": f"{name}-{dra.DRIVER}-", "ownerReferences": [owner]},
                        "spec": {**spec, "pool": {**spec["pool"], "generation": generation}}}
                self.kube.create(RESOURCESLICES, body)
        self._published[name] = wanted

    # --- NodePrepareResources / NodeUnprepareResources -------------------------------------------
    def _answer(self, claim: dict, node_name: str, gpus, driver_version: str) -> None:
        notes = meta(claim).get("annotations") or {}
        ns, claim_name = meta(claim).get("namespace"), meta(claim)["name"]
        if notes.get(PREPARE_ANNOTATION) == node_name and PREPARED_ANNOTATION not in notes:
            results = [r for r in _results(claim) if r.get("driver") == dra.DRIVER and r.get("pool") == node_name]
            if not results:
                return
            answer = dra.prepare(results, gpus.model, gpus.count, node_name, driver_version)
            patch = {"metadata": {"annotations": {PREPARED_ANNOTATION: json.dumps(answer, separators=(",", ":"))}}}
        elif not notes.get(PREPARE_ANNOTATION) and PREPARED_ANNOTATION in notes:
            patch = {"metadata": {"annotations": {PREPARED_ANNOTATION: None}}}
        else:
            return
        try:
            self.kube.patch(RESOURCECLAIMS, claim_name, patch, ns)
        except ApiException as exc:
            if exc.status != 404:       # a claim deleted meanwhile needs no answer
                raise
