"""Node Feature Discovery as the GPU Operator deploys it: the ``feature.node.kubernetes.io/*`` labels.

The chart's ``node-feature-discovery`` sub-chart runs nfd-worker on every node
with ``sources.pci.deviceClassWhitelist: [02, 0200, 0207, 0300, 0302]`` and
``deviceLabelFields: [vendor]``, so a node with an NVIDIA GPU (PCI class 0302,
vendor 10de) gets ``feature.node.kubernetes.io/pci-10de.present=true``
(kubernetes-sigs/node-feature-discovery ``source/pci``). The ``kernel`` and
``system`` sources add ``kernel-version.*`` and ``system-os_release.*``, the
labels the operator builds the driver image tag from (``580.105.08-ubuntu22.04``).
nfd-worker publishes what it found as one ``NodeFeature`` (``nfd.k8s-sigs.io/v1alpha1``) per
node, in its own namespace and named after the node (:func:`node_feature`, as v0.18's
``updateNodeFeatureObject`` builds it); nfd-master labels the node from that object's
``spec.labels`` and records the labels it manages in the ``nfd.node.kubernetes.io/feature-labels``
annotation (names without the default ``feature.node.kubernetes.io/`` prefix),
which is what its ``-prune`` job reads to remove them when the chart is uninstalled.

Only the labels other components read are produced (no ``cpu-*``, ``storage-*``,
``memory-*``), and only the features behind them (``kernel.version``,
``system.osrelease``, the GPUs' ``pci.device`` class, vendor and device); the
emulated hardware is what the node's annotations and ``status.nodeInfo`` say.
"""
from __future__ import annotations

import re
from typing import Iterator

from .. import kubeclient
from .hardware import NVIDIA_PCI_VENDOR_ID
from .nodestate import node_gpus

PREFIX = "feature.node.kubernetes.io/"
FEATURE_LABELS_ANNOTATION = "nfd.node.kubernetes.io/feature-labels"
PCI_NVIDIA_LABEL = PREFIX + "pci-10de.present"
NODEFEATURES = kubeclient.Resource("nfd.k8s-sigs.io/v1alpha1", "nodefeatures", namespaced=True)
NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"               # nfdv1alpha1.NodeFeatureObjNodeNameLabel
WORKER_VERSION_ANNOTATION = "nfd.node.kubernetes.io/worker.version"  # nfdv1alpha1.WorkerVersionAnnotation

# osImage (what /etc/os-release PRETTY_NAME says) -> os-release ID.
_OS_IDS = (("Ubuntu", "ubuntu"), ("Debian", "debian"), ("Red Hat Enterprise Linux CoreOS", "rhcos"),
           ("Red Hat Enterprise Linux", "rhel"), ("Rocky Linux", "rocky"), ("CentOS", "centos"),
           ("Amazon Linux", "amzn"), ("SUSE Linux Enterprise", "sles"))


def os_release(os_image: str) -> tuple[str, str] | None:
    """``(ID, VERSION_ID)`` for an osImage such as ``Ubuntu 22.04.5 LTS`` -> ``("ubuntu", "22.04")``."""
    for prefix, os_id in _OS_IDS:
        if os_image.startswith(prefix):
            match = re.search(r"(\d+(?:\.\d+)?)", os_image[len(prefix):])
            if match:
                return os_id, match.group(1)
    return None


def _version_parts(name: str, version: str) -> dict[str, str]:
    """nfd's ``parseVersion``: full string, then ``.major``, ``.minor``, ``.revision`` where present."""
    parts = re.split(r"[.-]", version)
    out = {name: version}
    for suffix, part in zip(("major", "minor", "revision"), parts):
        if part.isdigit() or (part and part[0].isdigit()):
            out[f"{name}.{suffix}"] = re.match(r"\d+", part).group(0)
    return out


def nfd_labels(node: dict) -> dict[str, str]:
    """The labels nfd-worker publishes for ``node`` (full names)."""
    info = (node.get("status") or {}).get("nodeInfo") or {}
    labels: dict[str, str] = {}
    kernel = info.get("kernelVersion")
    if kernel:
        full = _version_parts("kernel-version", kernel)
        full["kernel-version.full"] = full.pop("kernel-version")
        labels.update({PREFIX + k: v for k, v in full.items()})
    release = os_release(info.get("osImage", ""))
    if release:
        os_id, version = release
        labels[PREFIX + "system-os_release.ID"] = os_id
        labels.update({PREFIX + k.replace("VERSION_ID", "system-os_release.VERSION_ID", 1): v
                       for k, v in _version_parts("VERSION_ID", version).items()
                       if not k.endswith(".revision")})
    if node_gpus(node) is not None:
        labels[PCI_NVIDIA_LABEL] = "true"
    return dict(sorted(labels.items()))


def feature_labels_annotation(managed: dict[str, str]) -> str:
    """The annotation value listing ``managed`` label names, default namespace stripped, sorted."""
    return ",".join(sorted(name.removeprefix(PREFIX) for name in managed))


def node_features(node: dict) -> dict:
    """``spec.features`` of the node's NodeFeature: the raw features its labels are made from."""
    info = (node.get("status") or {}).get("nodeInfo") or {}
    attributes: dict[str, dict] = {}
    kernel = info.get("kernelVersion")
    if kernel:
        parts = _version_parts("kernel-version", kernel)
        attributes["kernel.version"] = {"elements": {"full": parts.pop("kernel-version"),
                                                     **{k.split(".", 1)[1]: v for k, v in parts.items()}}}
    release = os_release(info.get("osImage", ""))
    if release:
        os_id, version = release
        attributes["system.osrelease"] = {"elements": {"ID": os_id, **{
            k: v for k, v in _version_parts("VERSION_ID", version).items() if not k.endswith(".revision")}}}
    instances: dict[str, dict] = {}
    gpus = node_gpus(node)
    if gpus is not None:
        device = {"class": f"{gpus.model.pci_class:04x}", "vendor": f"{NVIDIA_PCI_VENDOR_ID:04x}",
                  "device": f"{gpus.model.pci_device_id:04x}"}
        instances["pci.device"] = {"elements": [{"attributes": dict(device)} for _ in range(gpus.count)]}
    return {"flags": {}, "attributes": attributes, "instances": instances}


def worker_version(worker_pod: dict) -> str:
    """The nfd-worker's version as ``version.Get()`` reports it: its image's tag."""
    image = ((worker_pod.get("spec") or {}).get("containers") or [{}])[0].get("image", "")
    return image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""


def node_feature(node: dict, namespace: str, worker_pod: dict) -> dict:
    """The NodeFeature nfd-worker on ``node`` publishes: named after the node, owned by the worker pod's owners
    (``blockOwnerDeletion: false``) and the pod itself, labels and features as the worker found them."""
    name = node["metadata"]["name"]
    pod_meta = worker_pod.get("metadata") or {}
    owners = [{**owner, "blockOwnerDeletion": False} for owner in pod_meta.get("ownerReferences") or []]
    owners.append({"apiVersion": "v1", "kind": "Pod", "name": pod_meta.get("name", ""), "uid": pod_meta.get("uid", "")})
    return {"apiVersion": NODEFEATURES.group_version, "kind": "NodeFeature",
            "metadata": {"name": name, "namespace": namespace, "labels": {NODE_NAME_LABEL: name},
                         "annotations": {WORKER_VERSION_ANNOTATION: worker_version(worker_pod)},
                         "ownerReferences": owners},
            "spec": {"features": node_features(node), "labels": nfd_labels(node)}}


def prune_nodes(kube) -> Iterator[str]:
    """``nfd-master -prune`` (``pkg/nfd-master/nfd-master.go`` ``prune``): from every node, the labels listed in
    ``nfd.node.kubernetes.io/feature-labels`` and that annotation; yields each node's name before pruning it."""
    for node in kube.list(kubeclient.NODES).get("items") or []:
        name = node["metadata"]["name"]
        yield name
        listed = (node["metadata"].get("annotations") or {}).get(FEATURE_LABELS_ANNOTATION)
        if listed is None:
            continue
        names = [n if "/" in n else PREFIX + n for n in listed.split(",") if n]
        kube.patch(kubeclient.NODES, name, {"metadata": {"labels": {n: None for n in names},
                                                         "annotations": {FEATURE_LABELS_ANNOTATION: None}}})
