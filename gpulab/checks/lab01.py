"""Lab 01, the GPU Operator: installed with the driver pinned, and what it makes the nodes advertise.

"Pinned" means the learner asked for the driver version, not that the
ClusterPolicy happens to carry it: a chart whose default driver is 580.105.08
(v25.10.1's) runs it without ``--set driver.version`` today and silently moves
to the next chart's driver on the next upgrade, under running GPU pods (the
course's chart, v26.7.0, defaults to 595.91.07). What the learner asked for is the Helm release's
user-supplied values (``helm get values RELEASE``), which Helm stores in the
release's Secret (pkg/storage/driver/secrets.go: type ``helm.sh/release.v1``,
labels ``owner=helm``, ``status``; ``data.release`` the base64 of the gzipped
release JSON, pkg/storage/driver/util.go ``encodeRelease``; its ``config`` is
the user values). The check reads them there, on any cluster Helm installed to.
"""
from __future__ import annotations

import base64
import gzip
import json

from .answers import as_int
from .gpus import GPU, PRODUCT, allocatable, family, gpu_nodes, labels, name, nodes_of_family, product
from .registry import check
from .settled import gpu_stack_settling
from .result import Result, failed, passed

PINNED_DRIVER = "580.105.08"
CLUSTERPOLICY = ("nvidia.com", "v1", "clusterpolicies")
CLUSTERPOLICY_CRD = "clusterpolicies.nvidia.com"
CHART = "gpu-operator"
HELM_RELEASE_TYPE = "helm.sh/release.v1"
_GZIP_MAGIC = b"\x1f\x8b"


def decode_release(secret: dict) -> dict | None:
    """A Helm release Secret's release record (helm's ``decodeRelease``), or None if it is not one."""
    try:
        raw = base64.b64decode(base64.b64decode((secret.get("data") or {})["release"]))
        return json.loads(gzip.decompress(raw) if raw[:2] == _GZIP_MAGIC else raw)
    except (KeyError, ValueError, TypeError, OSError):
        return None


def operator_releases(cluster) -> list[dict]:
    """Every deployed release of the gpu-operator chart, newest revision first within a release."""
    found = []
    for secret in cluster.secrets(label_selector="owner=helm,status=deployed"):
        release = decode_release(secret) if secret.get("type") == HELM_RELEASE_TYPE else None
        if release and ((release.get("chart") or {}).get("metadata") or {}).get("name") == CHART:
            found.append(release)
    return sorted(found, key=lambda r: (r.get("namespace", ""), r.get("name", ""), -int(r.get("version") or 0)))


def user_driver_version(release: dict):
    """``driver.version`` among the values the user supplied to the release (None when not given)."""
    return ((release.get("config") or {}).get("driver") or {}).get("version")


def cluster_policy(cluster) -> dict | None:
    """The ClusterPolicy the operator acts on (the chart's ``cluster-policy``; any name is accepted)."""
    policies = cluster.custom_objects(*CLUSTERPOLICY)
    active = [p for p in policies if ((p.get("status") or {}).get("state")) != "ignored"]
    return (active or policies or [None])[0]


@check("lab01.operator_pinned", "GPU Operator installed, driver pinned to 580.105.08, ClusterPolicy ready",
       settles=gpu_stack_settling)
def operator_pinned(cluster) -> Result:
    if cluster.crd(CLUSTERPOLICY_CRD) is None:
        return failed("the GPU Operator is not installed: the API server does not serve ClusterPolicy "
                      f"({CLUSTERPOLICY_CRD})",
                      "install the gpu-operator chart (in this course: `gpulab install gpu-operator`, which takes "
                      "helm's --version and --set flags) and pin the driver version with a --set flag")
    policy = cluster_policy(cluster)
    if policy is None:
        return failed("the ClusterPolicy CRD is installed but there is no ClusterPolicy, so the operator deploys "
                      "nothing", "the chart creates the ClusterPolicy cluster-policy; install the chart again")
    policy_name = name(policy)
    driver = (policy.get("spec") or {}).get("driver") or {}
    if driver.get("enabled") is False:
        return failed(f"ClusterPolicy {policy_name} has spec.driver.enabled=false: the operator does not manage "
                      "the driver, so nothing pins its version",
                      "reinstall with the driver enabled and its version set")
    releases = operator_releases(cluster)
    if not releases:
        return failed(f"ClusterPolicy {policy_name} exists, but no Helm release of the {CHART} chart is deployed, "
                      "so nothing records which driver version was asked for",
                      "install the chart with helm (here `gpulab install gpu-operator ...`), which records the "
                      "release and the values you set")
    release = releases[0]
    where = f"{release.get('name')} -n {release.get('namespace')}"
    asked = user_driver_version(release)
    if asked is None:
        return failed(f"the driver is not pinned: release {release.get('name')} was installed without "
                      f"driver.version among its values (`helm get values {where}` shows none), so it runs "
                      f"whatever driver the chart defaults to ({driver.get('version')} for this chart) and the "
                      "next chart upgrade replaces it under running GPU pods",
                      "set the driver version explicitly when you install (or upgrade) the chart: "
                      "--set driver.version=...")
    if str(asked) != PINNED_DRIVER:
        return failed(f"release {release.get('name')} pins driver.version={asked}; the exercise pins {PINNED_DRIVER}",
                      f"`helm get values {where}` shows the values you set")
    version = driver.get("version")
    if version != PINNED_DRIVER:
        shown = f"driver {version}" if version else "no spec.driver.version"
        return failed(f"release {release.get('name')} pins {PINNED_DRIVER}, but ClusterPolicy {policy_name} has "
                      f"{shown}: it was changed after the install",
                      "the driver version is the chart value driver.version; `kubectl get clusterpolicy "
                      f"{policy_name} -o jsonpath='{{.spec.driver.version}}'` shows it")
    state = (policy.get("status") or {}).get("state")
    if state != "ready":
        return failed(f"ClusterPolicy {policy_name} is {state or 'not reconciled yet'}: not every operand runs yet",
                      "wait until `kubectl get clusterpolicy` shows ready "
                      "(gpulab.wait_for(gpulab.conditions.clusterpolicy_ready()))")
    return passed(f"GPU Operator installed: release {release.get('name')} pins driver.version={PINNED_DRIVER} and "
                  f"ClusterPolicy {policy_name} is ready with it")


@check("lab01.allocatable_gpus", "answer: total allocatable nvidia.com/gpu in the cluster", answer="allocatable_gpus",
       settles=gpu_stack_settling)
def allocatable_gpus(cluster, answer) -> Result:
    nodes = cluster.nodes()
    per_node = {name(n): allocatable(n) for n in nodes}
    total = sum(per_node.values())
    if total == 0:
        return failed(f"no node advertises {GPU} yet, so there is nothing to count",
                      "the device plugin advertises GPUs once the GPU Operator runs (exercise "
                      "lab01.operator_pinned); wait for its ClusterPolicy to be ready")
    hint = (f"add up status.allocatable[{GPU}] over every node: "
            r"`kubectl get nodes -o custom-columns=NAME:.metadata.name,GPUS:.status.allocatable.nvidia\.com/gpu`")
    count = as_int(answer)
    if count is None:
        return failed(f"{answer!r} is not a whole number of GPUs", hint)
    if count == total:
        parts = ", ".join(f"{n} {v}" for n, v in per_node.items() if v)
        return passed(f"right: {total} {GPU} allocatable ({parts})")
    if count in per_node.values():
        return failed(f"{count} is what a single node advertises; the question asks for the whole cluster", hint)
    if count == len(gpu_nodes(nodes)):
        return failed(f"{count} is the number of GPU nodes; the question asks for GPUs", hint)
    return failed(f"{count} is not the cluster's total allocatable {GPU}", hint)


@check("lab01.gpu_product_labels", "answer: the H100 node's nvidia.com/gpu.product label", answer="h100_product",
       settles=gpu_stack_settling)
def gpu_product_labels(cluster, answer) -> Result:
    nodes = cluster.nodes()
    h100 = nodes_of_family(nodes, "h100")
    hint = f"`kubectl get nodes -L {PRODUCT}` shows the label on every node"
    if not h100:
        if not any(PRODUCT in labels(n) for n in nodes):
            return failed(f"no node has the label {PRODUCT} yet: GPU Feature Discovery labels nodes once the "
                          "GPU Operator runs", "finish exercise lab01.operator_pinned first")
        return failed(f"no node's {PRODUCT} names an H100", hint)
    expected = {product(n): name(n) for n in h100}
    given = str(answer).strip().strip("`'\"").strip()
    if given in expected:
        return passed(f"right: {expected[given]} carries {PRODUCT}={given}")
    node_names = ", ".join(expected.values())
    if given.lower() in (p.lower() for p in expected):
        return failed(f"{given!r} differs from the label on {node_names} in upper/lower case; label values are "
                      "case-sensitive", hint)
    others = {product(n): name(n) for n in nodes if product(n) and family(product(n)) != "h100"}
    if given in others:
        return failed(f"{given!r} is the product of {others[given]}, not of the H100 node", hint)
    if " " in given:
        return failed(f"{given!r} is not a label value: label values cannot contain spaces, so GFD rewrites the "
                      "GPU's name", hint)
    return failed(f"{given!r} is not the value of {PRODUCT} on the H100 node {node_names}", hint)
