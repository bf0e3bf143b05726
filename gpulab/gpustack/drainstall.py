"""``gpulab install nvidia-dra-driver-gpu``: NVIDIA's DRA driver for GPUs, as its Helm chart installs it.

On a real cluster: ``helm install nvidia-dra-driver-gpu nvidia/nvidia-dra-driver-gpu --version=25.12.0
--namespace nvidia-dra-driver-gpu --create-namespace --set gpuResourcesEnabledOverride=true`` (the chart of
kubernetes-sigs/dra-driver-nvidia-gpu, deployments/helm/nvidia-dra-driver-gpu at v25.12.0, its newest release).
This creates, through the API, what that chart's templates create with the given values:

* the DeviceClasses (templates/deviceclass-*.yaml, :func:`.dra.device_classes`);
* the ``nvidia-dra-driver-gpu-kubelet-plugin`` DaemonSet (templates/kubeletplugin.yaml), on nodes NFD or GFD
  marks as having an NVIDIA GPU and ``kubeletPlugin.nodeSelector`` selects, its ``FEATURE_GATES`` from
  ``featureGates`` (``featureGates.DynamicMIG=true`` publishes MIG partitions); where its pod runs, the GPU
  stack plays the plugin (:mod:`.drakubeletplugin`);
* the ``nvidia-dra-driver-gpu-controller`` Deployment when ``resources.computeDomains.enabled``.

The chart's refusals come first, with its text (templates/validation.yaml): GPU allocation
(``resources.gpus.enabled``, true by default) is refused unless ``gpuResourcesEnabledOverride=true``, since the
driver would collide with the device plugin on the same node: the chart cannot see the device plugin, so the
override is the installer's word that it is off where the kubelet plugin runs; the ``default`` namespace is
refused unless ``allowDefaultNamespace=true``. Not rendered: RBAC, the ComputeDomain CRDs and the webhook (no
compute domains are emulated), the Helm release Secret.

Hand-written rather than rendered by helm: helm is not in the course environment, and the chart's objects
are few.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from datetime import datetime
from typing import Any

from .. import kubeclient
from ..kubeclient import ApiException, Resource
from .chart import parse_set
from .dra import device_classes
from .drakubeletplugin import COMPONENT_LABEL, FEATURE_GATES_ENV, KUBELET_PLUGIN

CHART_NAMES = ("nvidia-dra-driver-gpu", "nvidia/nvidia-dra-driver-gpu")
CHART = "nvidia-dra-driver-gpu"
VERSION = "25.12.0"
RELEASE = CHART
DEFAULT_NAMESPACE = CHART
IMAGE = f"nvcr.io/nvidia/k8s-dra-driver-gpu:v{VERSION}"
DEVICECLASSES = Resource("resource.k8s.io/v1", "deviceclasses", namespaced=False)
_POLL_SECONDS = 0.5
_VALIDATION = f"execution error at ({CHART}/templates/validation.yaml:{{line}}:4): "
# The chart's default values that this emulation reads (values.yaml at v25.12.0).
DEFAULTS: dict[str, Any] = {
    "nvidiaDriverRoot": "/", "gpuResourcesEnabledOverride": False, "allowDefaultNamespace": False,
    "namespace": "", "namespaceOverride": "", "featureGates": {}, "logVerbosity": "4",
    "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}},
    "kubeletPlugin": {"nodeSelector": {}},
}
# kubeletPlugin.affinity: a node with an NVIDIA PCI device (NFD) or a GPU (GFD).
_GPU_NODE_TERMS = [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]} for key, value in (
    ("feature.node.kubernetes.io/pci-10de.present", "true"), ("feature.node.kubernetes.io/cpu-model.vendor_id",
                                                              "NVIDIA"), ("nvidia.com/gpu.present", "true"))]


# templates/validation.yaml (v25.12.0), its third ``fail``: the chart cannot see whether the device plugin serves
# the nodes, so GPU allocation waits for the installer's word that it does not (gpuResourcesEnabledOverride).
GPU_RESOURCES_REFUSAL = (
    "\n\nThe default value of 'resources.gpus.enabled == true'. However, when 'resources.gpus.enabled=true' this DRA "
    "driver cannot be deployed alongside the standard GPU device plugin on the same node. To avoid potential "
    "collisions between these two components, we will not allow this default to take effect until KEP 5004 has "
    "reached GA in upstream Kubernetes.\n\nIf you are sure you have disabled the deployment of the standard GPU "
    "device plugin and want to remove this error and force 'resources.gpus.enabled=true', you must also:\n\n"
    "    --set 'gpuResourcesEnabledOverride=true'\n\nOnce KEP 5004 has reached GA, this DRA driver will be able to "
    "honour extended resource requests for 'nvidia.com/gpu' alongside requests made using ResourceClaims, "
    "essentially obsoleting the need for the standard GPU device plugin altogether. If you want to try this feature "
    "now, you can enable it in upstream Kubernetes v1.35+ by setting the 'DRAExtendedResource' feature gate on the "
    "'kube-apiserver', 'kube-scheduler', 'kube-controller-manager', and 'kubelet'.")


class InstallError(RuntimeError):
    """A helm-style failure; ``str()`` is what follows ``Error: INSTALLATION FAILED: ``."""


def values_for(sets: list[str]) -> dict[str, Any]:
    def merge(base: dict, over: dict) -> dict:
        out = copy.deepcopy(base)
        for key, value in over.items():
            out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        return out

    return merge(DEFAULTS, parse_set(sets))


def validate(values: dict[str, Any], namespace: str) -> None:
    """templates/validation.yaml: the chart's ``fail`` calls, in its order."""
    if values.get("namespace"):
        raise InstallError(_VALIDATION.format(line=21) + f"\nValue 'namespace' set to {values['namespace']}"
                           "\nSetting an explicit 'namespace' in values.yaml or via --set on the command line is no "
                           "longer supported.\nUse --namespace (with --create-namespace as necessary) instead."
                           "\nSee: https://helm.sh/docs/helm/helm_install/#options")
    if namespace == "default" and not values.get("namespaceOverride") and not values.get("allowDefaultNamespace"):
        raise InstallError(_VALIDATION.format(line=30) + "\nRunning in the 'default' namespace is not recommended."
                           "\nSet 'allowDefaultNamespace=true' to bypass this error.\nOtherwise, use --namespace (with "
                           "--create-namespace as necessary) to run in a specific namespace."
                           "\nSee: https://helm.sh/docs/helm/helm_install/#options")
    if values["resources"]["gpus"].get("enabled") and not values.get("gpuResourcesEnabledOverride"):
        raise InstallError(_VALIDATION.format(line=42) + GPU_RESOURCES_REFUSAL)


def _labels(release: str) -> dict[str, str]:
    return {"helm.sh/chart": f"{CHART}-{VERSION}", "app.kubernetes.io/version": VERSION,
            "app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": CHART,
            "app.kubernetes.io/instance": release}


def render(values: dict[str, Any], release: str, namespace: str) -> list[tuple[Resource, dict]]:
    """The chart's objects for these values."""
    gpus = bool(values["resources"]["gpus"].get("enabled"))
    domains = bool(values["resources"]["computeDomains"].get("enabled"))
    gates = "".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}," for k, v in
                    sorted((values.get("featureGates") or {}).items()))
    out: list[tuple[Resource, dict]] = [(DEVICECLASSES, c) for c in device_classes(gpus=gpus,
                                                                                    compute_domains=domains)]

    def workload(kind: str, component: str, containers: list[dict], **pod_spec) -> dict:
        selector = {COMPONENT_LABEL: component}
        return {"apiVersion": "apps/v1", "kind": kind,
                "metadata": {"name": f"{CHART}-{component}", "namespace": namespace, "labels": _labels(release)},
                "spec": {"selector": {"matchLabels": selector},
                         "template": {"metadata": {"labels": {"app.kubernetes.io/name": CHART,
                                                              "app.kubernetes.io/instance": release, **selector}},
                                      "spec": {"priorityClassName": "system-node-critical", "containers": containers,
                                               **pod_spec}}}}

    env = [{"name": "NVIDIA_DRIVER_ROOT", "value": str(values.get("nvidiaDriverRoot", "/"))},
           {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
           {"name": FEATURE_GATES_ENV, "value": gates},
           {"name": "LOG_VERBOSITY", "value": str(values.get("logVerbosity", "4"))}]
    containers = []
    if domains:
        containers.append({"name": "compute-domains", "image": IMAGE, "command": ["compute-domain-kubelet-plugin"],
                           "env": env, "securityContext": {"privileged": True}})
    if gpus:
        containers.append({"name": "gpus", "image": IMAGE, "command": ["gpu-kubelet-plugin"], "env": env,
                           "securityContext": {"privileged": True}})
    if containers:
        node_selector = dict((values.get("kubeletPlugin") or {}).get("nodeSelector") or {})
        out.append((kubeclient.DAEMONSETS, workload(
            "DaemonSet", KUBELET_PLUGIN, containers, **({"nodeSelector": node_selector} if node_selector else {}),
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": _GPU_NODE_TERMS}}})))
    if domains:
        controller = workload("Deployment", "controller", [
            {"name": "compute-domain", "image": IMAGE, "command": ["compute-domain-controller", "-v",
                                                                   str(values.get("logVerbosity", "4"))]}],
            tolerations=[{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                          "effect": "NoSchedule"}, {"key": "CriticalAddonsOnly", "operator": "Exists"}])
        controller["spec"]["replicas"] = 1
        out.append((kubeclient.DEPLOYMENTS, controller))
    return out


def install(kube: kubeclient.Kube, *, release: str = RELEASE, namespace: str = DEFAULT_NAMESPACE,
            sets: list[str] | None = None, wait: bool = True, timeout: float = 300.0) -> None:
    values = values_for(list(sets or ()))
    validate(values, namespace)
    objects = render(values, release, namespace)
    if kube.try_get(kubeclient.DAEMONSETS, f"{CHART}-{KUBELET_PLUGIN}", namespace) is not None:
        raise InstallError("cannot re-use a name that is still in use")
    if kube.try_get(kubeclient.NAMESPACES, namespace) is None:
        kube.create(kubeclient.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for resource, obj in objects:
        try:
            kube.create(resource, obj, namespace if resource.namespaced else None)
        except ApiException as exc:
            if exc.status != 409:
                raise InstallError(kubeclient.error_message(exc)) from None
            raise InstallError(f'{obj["kind"]} "{obj["metadata"]["name"]}" exists and cannot be imported into the '
                               f'current release') from None
    if wait:
        _wait(kube, objects, namespace, timeout)


def _ready(kube: kubeclient.Kube, resource: Resource, name: str, namespace: str) -> bool:
    status = kube.get(resource, name, namespace).get("status") or {}
    if resource is kubeclient.DAEMONSETS:
        return int(status.get("numberReady") or 0) >= int(status.get("desiredNumberScheduled") or 0) \
            and "desiredNumberScheduled" in status
    return int(status.get("availableReplicas") or 0) >= 1


def _wait(kube: kubeclient.Kube, objects: list[tuple[Resource, dict]], namespace: str, timeout: float) -> None:
    """helm --wait: the DaemonSet's pods and the Deployment's replica ready."""
    deadline = time.monotonic() + timeout
    pending = [(r, o["metadata"]["name"]) for r, o in objects if r in (kubeclient.DAEMONSETS, kubeclient.DEPLOYMENTS)]
    while pending:
        pending = [(r, n) for r, n in pending if not _ready(kube, r, n, namespace)]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise InstallError("context deadline exceeded")
        time.sleep(_POLL_SECONDS)


def uninstall(kube: kubeclient.Kube, *, release: str = RELEASE, namespace: str = DEFAULT_NAMESPACE) -> None:
    if kube.try_get(kubeclient.DAEMONSETS, f"{CHART}-{KUBELET_PLUGIN}", namespace) is None:
        raise InstallError(f"uninstall: Release not loaded: {release}: release: not found")
    for resource, obj in render(values_for([]), release, namespace):
        try:
            kube.delete(resource, obj["metadata"]["name"], namespace if resource.namespaced else None)
        except ApiException as exc:
            if exc.status != 404:
                raise


# --- the command line ------------------------------------------------------------------------------

def _wrap(sub: argparse._SubParsersAction, verb: str, run) -> None:
    parser = sub.choices.get(verb)
    if parser is None:
        return
    other = parser.get_default("func")
    default_namespace = parser.get_default("namespace")
    default_name = parser.get_default("name")

    def dispatch(args: argparse.Namespace) -> int:
        if args.chart not in CHART_NAMES:
            return other(args)
        # The options' defaults are the GPU Operator's; an untouched one means this chart's default.
        namespace = DEFAULT_NAMESPACE if args.namespace == default_namespace else args.namespace
        release = RELEASE if getattr(args, "name", None) in (None, default_name) else args.name
        return run(args, namespace, release)

    parser.set_defaults(func=dispatch)


def _connect(args: argparse.Namespace) -> kubeclient.Kube:
    return kubeclient.Kube.from_kubeconfig(kubeclient.resolve_kubeconfig(getattr(args, "kubeconfig", None)),
                                           getattr(args, "context", None), "helm")


def _run_install(args: argparse.Namespace, namespace: str, release: str) -> int:
    from .install import Release, summary

    try:
        install(_connect(args), release=release, namespace=namespace, sets=getattr(args, "sets", []),
                wait=getattr(args, "wait", True), timeout=getattr(args, "timeout", 300.0))
    except InstallError as exc:
        print(f"Error: INSTALLATION FAILED: {exc}", file=sys.stderr)
        return 1
    print(summary(Release(release, namespace, 1, VERSION, {}, datetime.now().astimezone())), end="")
    return 0


def _run_uninstall(args: argparse.Namespace, namespace: str, release: str) -> int:
    try:
        uninstall(_connect(args), release=release, namespace=namespace)
    except InstallError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(f'release "{release}" uninstalled')
    return 0


def extend_install(sub: argparse._SubParsersAction) -> None:
    """Teach ``gpulab install`` (the GPU stack's) this chart."""
    _wrap(sub, "install", _run_install)


def extend_uninstall(sub: argparse._SubParsersAction) -> None:
    """Teach ``gpulab uninstall`` this chart."""
    _wrap(sub, "uninstall", _run_uninstall)
