"""``gpulab install|upgrade|uninstall gpu-operator``: what ``helm install --wait gpu-operator nvidia/gpu-operator`` does.

Helm renders the chart's templates with the values (:mod:`.chart`), creates
the CRDs of ``crds/`` first, then the objects, records the release in a Secret
``sh.helm.release.v1.<name>.v<revision>`` (type ``helm.sh/release.v1``, labels
``name``/``owner=helm``/``status``/``version``, ``data.release`` the gzipped,
base64 release JSON), waits (``--wait``) until its Deployments and DaemonSets
are ready, and prints the release summary (helm ``pkg/cmd/install.go`` /
``printRelease``). The chart's objects: the ``gpu-operator`` Deployment, the
``cluster-policy`` ClusterPolicy, and the node-feature-discovery sub-chart
(nfd-master and nfd-gc Deployments, the nfd-worker DaemonSet and its config).
Uninstall deletes them (CRDs stay, as Helm never deletes ``crds/``) and runs
the sub-chart's post-delete hook (``templates/post-delete-job.yaml``): its
ServiceAccount, ClusterRole, ClusterRoleBinding and the Job
``<release>-node-feature-discovery-prune`` running ``nfd-master -prune``, which
removes the labels nfd-master managed (including GFD's) from every node
(:mod:`.nfdmaster`); Helm waits for the Job to complete, then deletes the hook's
objects (``hook-succeeded``). The operator's own ``nvidia.com/gpu.deploy.*``
labels stay, as on a real cluster. On a cluster with stand-in images the Job's
container is a one-shot stand-in and the command prunes, as before.

On a cluster whose kubelets really run the pods (kind), the Deployments' and
the DaemonSet's pods run stand-in images (:mod:`.standins`), so the real
operator never starts there.

The CRDs are all the chart's: ``clusterpolicies`` and ``nvidiadrivers`` of
nvidia.com, and the sub-chart's ``nodefeatures``, ``nodefeaturerules`` and
``nodefeaturegroups`` of nfd.k8s-sigs.io, with NVIDIA's complete schemas
(:func:`.chart.operator_crds`). Not rendered: RBAC objects. The NodeFeature
objects are nfd-worker's, created once its pods run (:mod:`.nfd`).
"""
from __future__ import annotations

import base64
import copy
import gzip
import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable

import yaml

from .. import kubeclient
from ..kubeclient import ApiException
from . import chart, nfd, standins
from .gpucluster import GPUCLUSTERS
from .operator import CLUSTERPOLICIES

RELEASE_TYPE = "helm.sh/release.v1"
DEFAULT_RELEASE = "gpu-operator"
DEFAULT_NAMESPACE = "gpu-operator"
NFD_IMAGE = "registry.k8s.io/nfd/node-feature-discovery"
# The node-feature-discovery sub-chart each gpu-operator chart pins (Chart.yaml dependencies).
NFD_VERSIONS = {"v25.10.1": "v0.18.2", "v26.3.3": "v0.18.3", "v26.7.0": "v0.19.0"}
CLUSTERROLES = kubeclient.Resource("rbac.authorization.k8s.io/v1", "clusterroles", namespaced=False)
CLUSTERROLEBINDINGS = kubeclient.Resource("rbac.authorization.k8s.io/v1", "clusterrolebindings", namespaced=False)
POST_DELETE_HOOK = {"helm.sh/hook": "post-delete", "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"}
CHART_DESCRIPTION = "NVIDIA GPU Operator creates/configures/manages GPUs atop Kubernetes"
WAIT_POLL_SECONDS = 0.25   # helm polls every 2 s; how often is invisible but for the wait, which teaches nothing


class InstallError(RuntimeError):
    """A helm-style failure; ``str()`` is what follows ``Error: `` on helm's stderr."""


@dataclass
class Release:
    name: str
    namespace: str
    revision: int
    version: str
    values: dict[str, Any]          # the user-supplied values (helm's ``config``)
    deployed: datetime
    status: str = "deployed"


# --- rendering ----------------------------------------------------------------------------------

def _nfd_labels(release: str, nfd_version: str, role: str | None = None) -> dict[str, str]:
    labels = {"helm.sh/chart": f"node-feature-discovery-{nfd_version.lstrip('v')}",
              "app.kubernetes.io/name": "node-feature-discovery", "app.kubernetes.io/instance": release,
              "app.kubernetes.io/version": nfd_version, "app.kubernetes.io/managed-by": "Helm"}
    if role:
        labels["role"] = role
    return labels


def _nfd_selector(release: str, role: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "node-feature-discovery", "app.kubernetes.io/instance": release, "role": role}


_CONTROL_PLANE_TOLERATION = {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "",
                             "effect": "NoSchedule"}
_PREFER_CONTROL_PLANE = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
    "weight": 1, "preference": {"matchExpressions": [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "In", "values": [""]}]}}]}}


def render(values: dict[str, Any], version: str, release: str, namespace: str) -> list[tuple[kubeclient.Resource, dict]]:
    """The chart's objects for ``values`` (CRDs excluded), in Helm's install order."""
    operator_values = values.get("operator", {})
    labels = chart.chart_labels(version, release)
    nfd_values = values.get("node-feature-discovery", {})
    nfd_version = NFD_VERSIONS[version]
    nfd_image = f"{NFD_IMAGE}:{nfd_version}"
    priority = nfd_values.get("priorityClassName")
    objects: list[tuple[kubeclient.Resource, dict]] = []

    def meta(name: str, extra: dict[str, str]) -> dict:
        return {"name": name, "namespace": namespace, "labels": extra}

    objects.append((kubeclient.SERVICEACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                             "metadata": meta("gpu-operator", {**labels, "app.kubernetes.io/component": "gpu-operator"})}))
    objects.append((kubeclient.SERVICEACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                             "metadata": meta("node-feature-discovery", _nfd_labels(release, nfd_version))}))
    worker = nfd_values.get("worker", {})
    objects.append((kubeclient.CONFIGMAPS, {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": meta(f"{release}-node-feature-discovery-worker-conf", _nfd_labels(release, nfd_version)),
        "data": {"nfd-worker.conf": yaml.safe_dump(worker.get("config") or {}, sort_keys=False)}}))
    master_args = [f"-extra-label-ns={','.join(nfd_values.get('master', {}).get('config', {}).get('extraLabelNs', []))}"]

    def nfd_pod(role: str, command: str, args: list[str], tolerations: list, affinity: dict | None) -> dict:
        spec: dict[str, Any] = {"serviceAccountName": "node-feature-discovery",
                                "containers": [{"name": role, "image": nfd_image, "imagePullPolicy": "IfNotPresent",
                                                "command": [command], "args": args,
                                                "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {
                                                    "apiVersion": "v1", "fieldPath": "spec.nodeName"}}}]}],
                                "tolerations": tolerations}
        if priority:
            spec["priorityClassName"] = priority
        if affinity:
            spec["affinity"] = affinity
        return {"metadata": {"labels": _nfd_selector(release, role)}, "spec": spec}

    objects.append((kubeclient.DEPLOYMENTS, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": meta(f"{release}-node-feature-discovery-master", _nfd_labels(release, nfd_version, "master")),
        "spec": {"replicas": 1, "selector": {"matchLabels": _nfd_selector(release, "master")},
                 "template": nfd_pod("master", "nfd-master", master_args, [_CONTROL_PLANE_TOLERATION],
                                     _PREFER_CONTROL_PLANE)}}))
    objects.append((kubeclient.DAEMONSETS, {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": meta(f"{release}-node-feature-discovery-worker", _nfd_labels(release, nfd_version, "worker")),
        "spec": {"selector": {"matchLabels": _nfd_selector(release, "worker")},
                 "template": nfd_pod("worker", "nfd-worker", ["-feature-gates=NodeFeatureAPI=true"],
                                     list(worker.get("tolerations") or []), None)}}))
    if (nfd_values.get("gc") or {}).get("enable", True):
        objects.append((kubeclient.DEPLOYMENTS, {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": meta(f"{release}-node-feature-discovery-gc", _nfd_labels(release, nfd_version, "gc")),
            "spec": {"replicas": 1, "selector": {"matchLabels": _nfd_selector(release, "gc")},
                     "template": nfd_pod("gc", "nfd-gc", ["-gc-interval=1h"], [], None)}}))

    operator_labels = {**labels, "app.kubernetes.io/component": "gpu-operator",
                       "nvidia.com/gpu-driver-upgrade-drain.skip": "true"}
    image = f"{operator_values['repository']}/{operator_values['image']}:{operator_values.get('version') or version}"
    logging = operator_values.get("logging") or {}
    container = {
        "name": "gpu-operator", "image": image, "imagePullPolicy": operator_values.get("imagePullPolicy", "IfNotPresent"),
        "command": ["gpu-operator"],
        "args": ["--leader-elect", f"--zap-time-encoding={logging.get('timeEncoding', 'epoch')}",
                 f"--zap-log-level={logging.get('level', 'info')}"],
        "env": [{"name": "WATCH_NAMESPACE", "value": ""},
                {"name": "OPERATOR_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                          "fieldPath": "metadata.namespace"}}}],
        "ports": [{"name": "metrics", "containerPort": 8080}],
    }
    if operator_values.get("resources"):
        container["resources"] = copy.deepcopy(operator_values["resources"])
    pod_spec: dict[str, Any] = {"serviceAccountName": "gpu-operator", "containers": [container],
                                "tolerations": copy.deepcopy(operator_values.get("tolerations") or [])}
    if operator_values.get("priorityClassName"):
        pod_spec["priorityClassName"] = operator_values["priorityClassName"]
    if operator_values.get("affinity"):
        pod_spec["affinity"] = copy.deepcopy(operator_values["affinity"])
    objects.append((kubeclient.DEPLOYMENTS, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": meta("gpu-operator", operator_labels),
        "spec": {"replicas": 1,
                 "selector": {"matchLabels": {"app.kubernetes.io/component": "gpu-operator", "app": "gpu-operator"}},
                 "template": {"metadata": {"labels": {**operator_labels, "app": "gpu-operator"},
                                           "annotations": dict(operator_values.get("annotations") or {})},
                              "spec": pod_spec}}}))
    with_policy, with_gpu_cluster = chart.deploys(values)
    if with_policy:
        objects.append((CLUSTERPOLICIES, chart.cluster_policy(values, version=version, release_name=release)))
    if with_gpu_cluster:
        objects.append((GPUCLUSTERS, chart.gpu_cluster(values, version=version, release_name=release)))
    return objects


def _for_cluster(kube: kubeclient.Kube,
                 objects: list[tuple[kubeclient.Resource, dict]]) -> list[tuple[kubeclient.Resource, dict]]:
    """The rendered objects, with stand-in images in their pod templates where the cluster asks for them."""
    if not standins.uses_stand_ins(kube):
        return objects
    return [(resource, standins.stand_in_workload(obj) if resource in (kubeclient.DEPLOYMENTS, kubeclient.DAEMONSETS)
             else obj) for resource, obj in objects]


# --- the release record -------------------------------------------------------------------------

def _secret_name(release: str, revision: int) -> str:
    return f"sh.helm.release.v1.{release}.v{revision}"


def _encode(doc: dict) -> str:
    return base64.b64encode(gzip.compress(json.dumps(doc).encode())).decode()


def _decode(data: str) -> dict:
    return json.loads(gzip.decompress(base64.b64decode(base64.b64decode(data))))


def _release_doc(rel: Release, first: datetime, description: str) -> dict:
    return {
        "name": rel.name, "namespace": rel.namespace, "version": rel.revision, "config": rel.values,
        "info": {"first_deployed": first.isoformat(), "last_deployed": rel.deployed.isoformat(), "deleted": "",
                 "description": description, "status": rel.status},
        "chart": {"metadata": {"name": chart.CHART_NAME, "version": rel.version, "appVersion": rel.version,
                               "apiVersion": "v2", "description": CHART_DESCRIPTION,
                               "kubeVersion": ">= 1.16.0-0"}},
        "manifest": "",
    }


def _release_secret(rel: Release, first: datetime, description: str) -> dict:
    return {
        "apiVersion": "v1", "kind": "Secret", "type": RELEASE_TYPE,
        "metadata": {"name": _secret_name(rel.name, rel.revision), "namespace": rel.namespace,
                     "labels": {"name": rel.name, "owner": "helm", "status": rel.status,
                                "version": str(rel.revision), "modifiedAt": str(int(time.time()))}},
        "data": {"release": base64.b64encode(_encode(_release_doc(rel, first, description)).encode()).decode()},
    }


def current_release(kube: kubeclient.Kube, release: str, namespace: str) -> tuple[Release, dict] | None:
    """The deployed revision of ``release`` and its Secret, or None."""
    try:
        listed = kube.list(kubeclient.SECRETS, namespace, label_selector=f"owner=helm,name={release}")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    deployed = [s for s in listed.get("items") or [] if s["metadata"]["labels"].get("status") == "deployed"]
    if not deployed:
        return None
    secret = max(deployed, key=lambda s: int(s["metadata"]["labels"].get("version", "0")))
    doc = _decode(secret["data"]["release"])
    rel = Release(doc["name"], namespace, int(doc["version"]), doc["chart"]["metadata"]["version"],
                  doc.get("config") or {}, datetime.fromisoformat(doc["info"]["last_deployed"]))
    return rel, doc


# --- install / upgrade / uninstall --------------------------------------------------------------

def _apply(kube: kubeclient.Kube, objects: list[tuple[kubeclient.Resource, dict]], namespace: str) -> None:
    for resource, obj in objects:
        ns = namespace if resource.namespaced else None
        try:
            kube.create(resource, obj, ns)
        except ApiException as exc:
            if exc.status != 409:
                raise InstallError(kubeclient.error_message(exc)) from None
            current = kube.get(resource, obj["metadata"]["name"], ns)
            body = {**obj, "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
            if "status" in current:
                body.pop("status", None)
            kube.update(resource, body)


def _served(crd: dict) -> kubeclient.Resource:
    """Where the CRD's storage version is served."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    return kubeclient.Resource(f"{spec['group']}/{version}", spec["names"]["plural"],
                               namespaced=spec["scope"] == "Namespaced")


def _ensure_crds(kube: kubeclient.Kube, timeout: float, version: str) -> None:
    """Helm's CRD step: create each CRD of ``crds/`` that is missing, then wait until all are served."""
    crds = chart.operator_crds(version)
    for crd in crds:
        try:
            kube.create(kubeclient.CRDS, crd)
        except ApiException as exc:
            if exc.status != 409:
                raise InstallError(kubeclient.error_message(exc)) from None
    deadline = time.monotonic() + timeout
    for resource in [_served(crd) for crd in crds]:
        while True:
            try:
                kube.list(resource)
                break
            except ApiException as exc:
                if exc.status != 404 or time.monotonic() > deadline:
                    raise InstallError(kubeclient.error_message(exc)) from None
            time.sleep(0.1)


def _ready(kube: kubeclient.Kube, resource: kubeclient.Resource, obj: dict, namespace: str) -> bool:
    """helm ``pkg/kube/ready.go``: Deployments with all replicas ready, DaemonSets up to date and ready."""
    current = kube.try_get(resource, obj["metadata"]["name"], namespace)
    if current is None:
        return False
    status = current.get("status") or {}
    if status.get("observedGeneration", 0) < current["metadata"].get("generation", 1):
        return False
    if resource is kubeclient.DEPLOYMENTS:
        return status.get("readyReplicas", 0) >= current["spec"].get("replicas", 1)
    desired = status.get("desiredNumberScheduled", 0)
    return status.get("updatedNumberScheduled", 0) == desired and status.get("numberReady", 0) >= desired - 1


def _wait(kube: kubeclient.Kube, objects: list[tuple[kubeclient.Resource, dict]], namespace: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    waiting = [(r, o) for r, o in objects if r in (kubeclient.DEPLOYMENTS, kubeclient.DAEMONSETS)]
    while waiting:
        waiting = [(r, o) for r, o in waiting if not _ready(kube, r, o, namespace)]
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise InstallError("context deadline exceeded")
        time.sleep(WAIT_POLL_SECONDS)


def install(kube: kubeclient.Kube, *, release: str = DEFAULT_RELEASE, namespace: str = DEFAULT_NAMESPACE,
            version: str | None = None, sets: list[str] | None = None, wait: bool = True,
            timeout: float = 300.0) -> Release:
    """``helm install [--wait] RELEASE nvidia/gpu-operator -n NAMESPACE --create-namespace [--version] [--set]``."""
    try:
        canonical = chart.normalise_version(version)
        overrides = chart.parse_set(sets or [])
        values = chart.values_for(canonical, overrides)
    except chart.ChartError as err:
        raise InstallError(str(err)) from None
    if current_release(kube, release, namespace) is not None:
        raise InstallError("cannot re-use a name that is still in use")
    kube.ensure(kubeclient.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    _ensure_crds(kube, timeout, canonical)
    objects = _for_cluster(kube, render(values, canonical, release, namespace))
    _apply(kube, objects, namespace)
    now = datetime.now().astimezone()
    rel = Release(release, namespace, 1, canonical, overrides, now)
    kube.create(kubeclient.SECRETS, _release_secret(rel, now, "Install complete"), namespace)
    if wait:
        _wait(kube, objects, namespace, timeout)
    return rel


def upgrade(kube: kubeclient.Kube, *, release: str = DEFAULT_RELEASE, namespace: str = DEFAULT_NAMESPACE,
            version: str | None = None, sets: list[str] | None = None, reuse_values: bool = False,
            reset_values: bool = False, wait: bool = True, timeout: float = 300.0) -> Release:
    """``helm upgrade RELEASE nvidia/gpu-operator [--version] [--set] [--reuse-values|--reset-values]``.

    Values as helm's ``Upgrade.reuseValues`` (pkg/action/upgrade.go) picks them: ``--reset-values`` the
    chart's defaults plus ``--set``; ``--reuse-values`` ``--set`` over the last release's values; neither,
    the last release's values when no ``--set`` is given, else the chart's defaults plus ``--set``.
    Without ``--version`` the release keeps its chart version (Helm would take the repository's newest).
    """
    found = current_release(kube, release, namespace)
    if found is None:
        raise InstallError(f'"{release}" has no deployed releases')
    previous, doc = found
    try:
        canonical = chart.normalise_version(version or previous.version)
        overrides = chart.parse_set(sets or [])
        if reuse_values and not reset_values:
            overrides = chart._coalesce(previous.values, overrides)  # noqa: SLF001 - Helm's own merge
        elif not reset_values and not overrides and previous.values:
            overrides = previous.values     # "copying values from gpu-operator (v1) to new release."
        values = chart.values_for(canonical, overrides)
    except chart.ChartError as err:
        raise InstallError(str(err)) from None
    _ensure_crds(kube, timeout, canonical)
    objects = _for_cluster(kube, render(values, canonical, release, namespace))
    _apply(kube, objects, namespace)
    old_name = _secret_name(release, previous.revision)
    # Helm's releasingUpgrade records the previous release again as superseded: the record itself (what
    # `helm history` reads) and the storage driver's labels, with a new modifiedAt (pkg/storage/driver/secrets.go).
    superseded = {**doc, "info": {**doc["info"], "status": "superseded"}}
    kube.patch(kubeclient.SECRETS, old_name,
               {"metadata": {"labels": {"status": "superseded", "modifiedAt": str(int(time.time()))}},
                "data": {"release": base64.b64encode(_encode(superseded).encode()).decode()}}, namespace)
    now = datetime.now().astimezone()
    rel = Release(release, namespace, previous.revision + 1, canonical, overrides, now)
    first = datetime.fromisoformat(doc["info"]["first_deployed"])
    kube.create(kubeclient.SECRETS, _release_secret(rel, first, "Upgrade complete"), namespace)
    if wait:
        _wait(kube, objects, namespace, timeout)
    return rel


def uninstall(kube: kubeclient.Kube, *, release: str = DEFAULT_RELEASE, namespace: str = DEFAULT_NAMESPACE,
              timeout: float = 300.0, on_prune: Callable[[str], None] | None = None) -> None:
    """``helm uninstall RELEASE -n NAMESPACE``: delete the chart's objects, then the NFD prune hook."""
    found = current_release(kube, release, namespace)
    if found is None:
        raise InstallError(f"uninstall: Release not loaded: {release}: release: not found")
    previous, _ = found
    values = chart.values_for(previous.version, previous.values)
    objects = render(values, previous.version, release, namespace)
    if chart._release_key(previous.version) >= chart._release_key(chart.GPUCLUSTER_FROM):  # noqa: SLF001
        _cleanup_gpu_cluster(kube, timeout)
    for resource, obj in reversed(objects):
        if resource is GPUCLUSTERS:
            continue        # helm.sh/resource-policy: keep; the pre-delete hook has deleted it
        kube.delete(resource, obj["metadata"]["name"], namespace if resource.namespaced else None,
                    propagation="Background")
    _wait_for_pods_to_stop(kube, namespace, release, timeout)
    hooks = prune_hook(previous.version, release, namespace)
    if standins.uses_stand_ins(kube):
        hooks = [(r, standins.stand_in_workload(o, {"nfd-master": "pruned by gpulab uninstall"}) if r == kubeclient.JOBS
                  else o) for r, o in hooks]
        for name in nfd.prune_nodes(kube):
            if on_prune:
                on_prune(name)
    run_hooks(kube, hooks, namespace, timeout)
    listed = kube.list(kubeclient.SECRETS, namespace, label_selector=f"owner=helm,name={release}")
    for secret in listed.get("items") or []:
        kube.delete(kubeclient.SECRETS, secret["metadata"]["name"], namespace)


def _cleanup_gpu_cluster(kube: kubeclient.Kube, timeout: float) -> None:
    """The pre-delete hook ``gpu-operator-cleanup-gpucluster`` (templates/cleanup_gpucluster.yaml, v26.7.0):
    delete the GPUCluster ``gpu-cluster`` and wait until it is gone, so the operator, still running, tears its
    DRA driver down (its finalizer) before helm deletes the operator. Run whether or not the release deployed
    one, as upstream's is."""
    try:
        kube.delete(GPUCLUSTERS, "gpu-cluster")
    except ApiException as exc:
        if exc.status == 404:
            return
        raise InstallError(kubeclient.error_message(exc)) from None
    deadline = time.monotonic() + timeout
    while kube.try_get(GPUCLUSTERS, "gpu-cluster") is not None:
        if time.monotonic() > deadline:
            raise InstallError("pre-delete hook gpu-operator-cleanup-gpucluster: timed out waiting for the condition")
        time.sleep(WAIT_POLL_SECONDS)


def _wait_for_pods_to_stop(kube: kubeclient.Kube, namespace: str, release: str, timeout: float) -> None:
    """The prune hook runs once the workers are gone, so no worker relabels a node behind it."""
    deadline = time.monotonic() + timeout
    selector = f"app.kubernetes.io/name=node-feature-discovery,app.kubernetes.io/instance={release}"
    while time.monotonic() < deadline:
        pods = kube.list(kubeclient.PODS, namespace, label_selector=selector).get("items") or []
        gfd = kube.list(kubeclient.PODS, namespace, label_selector="app=gpu-feature-discovery").get("items") or []
        if all(p["metadata"].get("deletionTimestamp") for p in pods + gfd):
            return
        time.sleep(0.5)


def prune_hook(version: str, release: str, namespace: str) -> list[tuple[kubeclient.Resource, dict]]:
    """The NFD sub-chart's post-delete hook objects (``postDeleteCleanup``), in Helm's install order."""
    nfd_version = NFD_VERSIONS[version]
    name = f"{release}-node-feature-discovery-prune"
    labels = _nfd_labels(release, nfd_version)

    def meta(namespaced: bool) -> dict:
        out = {"name": name, "labels": dict(labels), "annotations": dict(POST_DELETE_HOOK)}
        return {**out, "namespace": namespace} if namespaced else out

    return [
        (kubeclient.SERVICEACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(True)}),
        (CLUSTERROLES, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(False),
                        "rules": [{"apiGroups": [""], "resources": ["nodes", "nodes/status"],
                                   "verbs": ["get", "patch", "update", "list"]}]}),
        (CLUSTERROLEBINDINGS, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                               "metadata": meta(False),
                               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                               "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]}),
        (kubeclient.JOBS, {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(True), "spec": {"template": {
            "metadata": {"labels": {**labels, "role": "prune"}},
            "spec": {"serviceAccountName": name,
                     "containers": [{"name": "nfd-master", "image": f"{NFD_IMAGE}:{nfd_version}",
                                     "imagePullPolicy": "IfNotPresent", "command": ["nfd-master"], "args": ["-prune"]}],
                     "restartPolicy": "Never", "affinity": _PREFER_CONTROL_PLANE,
                     "tolerations": [_CONTROL_PLANE_TOLERATION]}}}}),
    ]


def run_hooks(kube: kubeclient.Kube, hooks: list[tuple[kubeclient.Resource, dict]], namespace: str,
              timeout: float) -> None:
    """Helm's ``execHook``: delete what is left of an earlier run (``before-hook-creation``), create each object,
    wait for a Job to complete, then delete them all (``hook-succeeded``)."""
    def where(resource: kubeclient.Resource) -> str | None:
        return namespace if resource.namespaced else None

    for resource, obj in hooks:
        kube.delete(resource, obj["metadata"]["name"], where(resource), propagation="Background")
    for resource, obj in hooks:
        kube.create(resource, obj, where(resource))
        if resource == kubeclient.JOBS:
            _wait_for_job(kube, obj["metadata"]["name"], namespace, timeout)
    for resource, obj in hooks:
        kube.delete(resource, obj["metadata"]["name"], where(resource), propagation="Background")


def _wait_for_job(kube: kubeclient.Kube, name: str, namespace: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = kube.try_get(kubeclient.JOBS, name, namespace) or {}
        for condition in (job.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Complete" and condition.get("status") == "True":
                return
            if condition.get("type") == "Failed" and condition.get("status") == "True":
                raise InstallError(f"uninstallation completed with 1 error(s): job {name} failed: "
                                   f"{condition.get('reason', '')}")
        time.sleep(0.25)
    raise InstallError(f"uninstallation completed with 1 error(s): job {name}: timed out waiting for the condition")


def summary(rel: Release) -> str:
    """helm's release summary (``pkg/cmd/status.go`` ``statusPrinter``)."""
    deployed = rel.deployed.strftime("%a %b %e %H:%M:%S %Y")
    return (f"NAME: {rel.name}\nLAST DEPLOYED: {deployed}\nNAMESPACE: {rel.namespace}\n"
            f"STATUS: {rel.status}\nREVISION: {rel.revision}\nTEST SUITE: None\n")
