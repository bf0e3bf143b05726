"""kube-system as a new kind cluster has it: the CoreDNS Deployment and its ``kube-dns`` Service, the kube-proxy
DaemonSet, and the control-plane static pods mirrored into the API (kind's kindnet CNI is left out).

kubeadm installs the DNS and proxy add-ons once the API answers (cmd/kubeadm/app/phases/addons), and the
control-plane node's kubelet creates a mirror pod for each static pod in
/etc/kubernetes/manifests (pkg/kubelet/pod/mirror_client.go: owned by the Node, annotated
``kubernetes.io/config.mirror`` with the manifest's hash, ``config.source: file``). The manifests are data
(``data/kube-system.yaml``, ``data/control-plane.yaml``); the controllers then run the add-ons like any
workload, so ``kubectl get pods -A`` and ``kubectl cluster-info`` show what learners see on kind.
"""
from __future__ import annotations

import hashlib
import string
import time
from pathlib import Path

import yaml

from .api import Api
from .errors import ApiError
from .objects import rfc3339

DATA = Path(__file__).parent / "data"
DNS_IP = "10.96.0.10"  # kubeadm: the tenth address of the service range
KEYS = {"Namespace": "namespaces", "StorageClass": "storageclasses.storage.k8s.io",
         "ServiceAccount": "serviceaccounts", "ConfigMap": "configmaps", "Service": "services",
         "Deployment": "deployments.apps", "DaemonSet": "daemonsets.apps", "Pod": "pods"}
MANAGERS = {"Pod": "kubelet"}


def _documents(name: str, **values: str) -> list[dict]:
    text = string.Template((DATA / name).read_text()).safe_substitute(values)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [doc for doc in yaml.load_all(text, Loader=loader) if doc]  # noqa: S506 - SafeLoader variant


def install(api: Api, cluster: str, version: str) -> None:
    """Create whatever of kube-system's add-ons and mirror pods is missing (a no-op on a resumed cluster)."""
    for obj in objects(cluster, version, api.try_get("nodes", f"{cluster}-control-plane")):
        _ensure(api, obj)


def objects(cluster: str, version: str, control_plane: dict | None) -> list[dict]:
    """kube-system's add-ons, kind's default storage and, given the control-plane Node, its mirror pods: what
    kubeadm and kind create, for any engine to create through its API."""
    found = _documents("kube-system.yaml", cluster=cluster, version=version, dns_ip=DNS_IP)
    found += _documents("local-path-storage.yaml")              # kind's default storage
    if control_plane is None:
        return found
    node_ip = next((a["address"] for a in control_plane["status"].get("addresses", []) if a["type"] == "InternalIP"),
                   "")
    return found + [_mirror(pod, control_plane) for pod in _documents(
        "control-plane.yaml", node=control_plane["metadata"]["name"], node_ip=node_ip, version=version,
        cluster=cluster)]


def _mirror(pod: dict, node: dict) -> dict:
    """The mirror pod of a static pod manifest on ``node``."""
    manifest_hash = hashlib.md5(yaml.safe_dump(pod, sort_keys=True).encode(), usedforsecurity=False).hexdigest()
    seen = rfc3339(time.time()).replace("Z", f".{time.time_ns() % 1_000_000_000:09d}Z")
    meta = pod["metadata"]
    meta["annotations"] = {**meta.get("annotations", {}), "kubernetes.io/config.hash": manifest_hash,
                           "kubernetes.io/config.mirror": manifest_hash, "kubernetes.io/config.seen": seen,
                           "kubernetes.io/config.source": "file"}
    meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node["metadata"]["name"],
                                "uid": node["metadata"]["uid"], "controller": True}]
    pod["spec"].update({"nodeName": node["metadata"]["name"], "hostNetwork": True,
                        "priorityClassName": "system-node-critical",
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                        "tolerations": [{"operator": "Exists", "effect": "NoExecute"}]})
    return pod


def _ensure(api: Api, obj: dict) -> None:
    try:
        api.create(KEYS[obj["kind"]], obj, obj["metadata"].get("namespace"),
                   manager=MANAGERS.get(obj["kind"], "kubeadm"))
    except ApiError as exc:
        # there already: 409, or 422 "provided IP is already allocated" for a Service that names its cluster IP
        # (the allocator runs before the name is looked up, as upstream's)
        namespace = obj["metadata"].get("namespace")
        if exc.code != 409 and api.try_get(KEYS[obj["kind"]], obj["metadata"]["name"], namespace) is None:
            raise
