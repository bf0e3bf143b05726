"""The checks' pure helpers, pinned; and the cluster states the other check tests build.

The check tests must not depend on the GPU stack's reconcilers (issue 4), so
:class:`FakeGpuStack` writes to the API what the stack would write, computed
with the stack's own pure modules (GFD labels from ``gpustack.gfd``, device
counts from ``gpustack.sharing.advertised``, MIG layouts from
``gpustack.mig.plan``, the ClusterPolicy from ``gpustack.chart``). The clusters
run without the GPU stack add-on (``gpulab.cluster.serve``), so nothing
reconciles those objects behind the test's back; the real scheduler and node
agent run the pods.
"""
from __future__ import annotations

import base64
import gzip
import json
import threading
import time
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

import pytest

from gpulab.checks import answers
from gpulab.checks.gpus import family
from gpulab.checks.kube import pod_request, scheduler_reasons, taint_text, tolerates, toleration_text
from tests.conftest import Cluster, start_cluster

PAUSE = "registry.k8s.io/pause:3.10.1"
DRIVER = "580.105.08"
H100, A100 = "gpulab-worker2", "gpulab-worker3"


def start_plain_cluster(tmp: Path, engine: str = "embedded") -> Cluster:
    """A cluster of ``engine`` without the GPU stack emulation, in its own GPULAB_HOME."""
    return start_cluster(tmp, engine=engine, gpu_stack=False)


def eventually(probe, *, timeout: float = 20.0, interval: float = 0.2):
    """Call ``probe`` until it returns something truthy; return the last value either way."""
    deadline = time.monotonic() + timeout
    value = probe()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = probe()
    return value


class FakeGpuStack:
    """What the GPU Operator, GFD, the device plugin and the MIG manager write to the API, written directly.

    Tests may run in any order and on any xdist worker, so each one first puts
    the cluster in the state it starts from with these methods.
    """

    def __init__(self, cluster: Cluster):
        from kubernetes import client

        self.cluster = cluster
        self.api = cluster.client()
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.extensions = client.ApiextensionsV1Api(self.api)

    # --- the operator --------------------------------------------------------------------------
    def operator(self, *, sets: tuple[str, ...] = (f"driver.version={DRIVER}",), version: str | None = None,
                 state: str = "ready", release: bool = True) -> dict:
        """The chart's ClusterPolicy for ``--set`` values ``sets`` and, with ``release``, Helm's record of the
        release (what ``helm get values`` reads); the previous policy and release replaced."""
        from kubernetes.client import ApiException

        from gpulab.gpustack import chart

        try:
            self.extensions.create_custom_resource_definition(chart.clusterpolicy_crd())
        except ApiException as exc:
            assert exc.status == 409
        eventually(lambda: any(c.type == "Established" and c.status == "True" for c in
                               self.extensions.read_custom_resource_definition(
                                   "clusterpolicies.nvidia.com").status.conditions or []))
        user_values = chart.parse_set(list(sets))
        policy = chart.cluster_policy(chart.values_for(version, user_values), version=version)
        try:
            self.custom.delete_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
        except ApiException as exc:
            assert exc.status == 404
        eventually(lambda: not self.custom.list_cluster_custom_object("nvidia.com", "v1", "clusterpolicies")["items"])
        self.helm_release(user_values if release else None, chart.normalise_version(version))
        created = self.custom.create_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", policy)
        if state:
            self.custom.patch_cluster_custom_object_status("nvidia.com", "v1", "clusterpolicies", "cluster-policy",
                                                           {"status": {"state": state, "namespace": "gpu-operator"}})
        return created

    def helm_release(self, user_values: dict | None, chart_version: str, name: str = "gpu-operator-1764547200",
                     namespace: str = "gpu-operator") -> None:
        """Helm's release Secret as helm 3 writes it (pkg/storage/driver: the release JSON gzipped and base64'd,
        in data.release, labelled owner=helm); None deletes every release record instead."""
        from kubernetes.client import ApiException

        try:
            self.core.create_namespace({"metadata": {"name": namespace}})
        except ApiException as exc:
            assert exc.status == 409
        self.core.delete_collection_namespaced_secret(namespace, label_selector="owner=helm")
        if user_values is None:
            return
        record = {"name": name, "namespace": namespace, "version": 1, "config": user_values,
                  "info": {"status": "deployed"},
                  "chart": {"metadata": {"name": "gpu-operator", "version": chart_version}}, "manifest": ""}
        helm_encoded = base64.b64encode(gzip.compress(json.dumps(record).encode()))
        self.core.create_namespaced_secret(namespace, {
            "metadata": {"name": f"sh.helm.release.v1.{name}.v1",
                         "labels": {"name": name, "owner": "helm", "status": "deployed", "version": "1"}},
            "type": "helm.sh/release.v1", "data": {"release": base64.b64encode(helm_encoded).decode()}})

    def remove_operator(self) -> None:
        """Back to a cluster that never saw the operator: the ClusterPolicy CRD (and so every policy) deleted."""
        from kubernetes.client import ApiException

        try:
            self.extensions.delete_custom_resource_definition("clusterpolicies.nvidia.com")
        except ApiException as exc:
            assert exc.status == 404
        assert eventually(lambda: "clusterpolicies.nvidia.com" not in {
            c.metadata.name for c in self.extensions.list_custom_resource_definition().items})

    # --- a node's GPUs, as GFD labels them and the device plugin advertises them -----------------------
    def gpu_node(self, node: str, model: str, count: int, *, mig_strategy: str = "single",
                 mig_config: str | None = None, mig_state: str = "success", sharing: dict | None = None) -> None:
        from gpulab.gpustack import gfd, hardware, mig
        from gpulab.gpustack import sharing as sharing_module

        gpu = hardware.gpu_model(model)
        layout = mig.plan(gpu, count, mig_config) if mig_config else mig.whole_gpus(count)
        config = sharing_module.parse_config(sharing) if sharing else sharing_module.NO_SHARING
        labels = gfd.gfd_labels(gpu, count, driver_version=DRIVER, cuda_version="13.0", mig_strategy=mig_strategy,
                                layout=layout, sharing=config)
        labels["nvidia.com/gpu.present"] = "true"
        if gpu.mig_capable:      # the operator's all-disabled default, applied by the MIG manager
            labels.update({"nvidia.com/mig.config": mig_config or "all-disabled",
                           "nvidia.com/mig.config.state": mig_state})
        resources = sharing_module.advertised(layout, mig_strategy, config)
        self.set_node(node, labels, resources)

    def set_node(self, node: str, labels: dict[str, str], resources: dict[str, int]) -> None:
        current = self.core.read_node(node)
        old_labels = current.metadata.labels or {}
        patch = {k: None for k in old_labels if k.startswith("nvidia.com/")}
        patch.update(labels)
        annotation = ",".join(sorted(resources))
        self.core.patch_node(node, {"metadata": {"labels": patch, "annotations": {
            "gpulab.dev/device-plugin-resources": annotation or None}}})
        old = {k for k in (current.status.allocatable or {}) if k.startswith("nvidia.com/")}
        amounts = {**{k: "0" for k in old}, **{k: str(v) for k, v in resources.items()}}
        self.core.patch_node_status(node, {"status": {"capacity": amounts, "allocatable": amounts}})

    def device_plugin_daemonset(self, *, config: str | None, default: str = "", mig_strategy: str = "mixed") -> None:
        """The operator's device plugin DaemonSet as rendered for ``devicePlugin.config`` ``config``/``default`` and
        ``mig.strategy`` (the fields gpu-operator's transformDevicePlugin writes; replaced if there), scheduled on no
        node: what the checks read of the operator's progress without pods behind it."""
        from kubernetes import client
        from kubernetes.client import ApiException

        apps, name = client.AppsV1Api(self.api), "nvidia-device-plugin-daemonset"
        try:
            apps.delete_namespaced_daemon_set(name, "gpu-operator")
        except ApiException as exc:
            assert exc.status == 404
        assert eventually(lambda: not apps.list_namespaced_daemon_set(
            "gpu-operator", field_selector=f"metadata.name={name}").items)
        env = [{"name": "MIG_STRATEGY", "value": mig_strategy}]
        pod: dict = {"nodeSelector": {"gpulab.test/no-node": "true"}, "containers": [
            {"name": "nvidia-device-plugin", "image": PAUSE, "env": env}]}
        if config:
            env.append({"name": "DEFAULT_CONFIG", "value": default})
            pod["volumes"] = [{"name": "available-configs", "configMap": {"name": config}}]
        apps.create_namespaced_daemon_set("gpu-operator", {
            "metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}}, "spec": pod}}})

    def device_plugin_failed(self, node: str, message: str) -> None:
        """The device plugin on ``node`` refusing its config, as the stack reports it: a ``DevicePluginFailed``
        Warning event on its pod (the one plugin pod of the operator's namespace, replaced)."""
        from kubernetes.client import ApiException

        name = "nvidia-device-plugin-daemonset-fake"
        try:
            self.core.delete_namespaced_pod(name, "gpu-operator", grace_period_seconds=0)
        except ApiException as exc:
            assert exc.status == 404
        assert eventually(lambda: not self.core.list_namespaced_pod(
            "gpu-operator", field_selector=f"metadata.name={name}").items)
        pod = self.core.create_namespaced_pod("gpu-operator", {
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "nvidia-device-plugin", "image": PAUSE}],
                     "terminationGracePeriodSeconds": 0}})
        self.core.create_namespaced_event("gpu-operator", {
            "metadata": {"generateName": f"{name}."}, "type": "Warning", "reason": "DevicePluginFailed",
            "message": message, "involvedObject": {"kind": "Pod", "apiVersion": "v1", "namespace": "gpu-operator",
                                                   "name": name, "uid": pod.metadata.uid}})

    def standard(self) -> None:
        """The default topology's GPU nodes with the operator's defaults: 8x H100 80GB, 4x A100 40GB."""
        self.gpu_node(H100, "H100", 8)
        self.gpu_node(A100, "A100-SXM4-40GB", 4)

    # --- nodes as the learner changes them ------------------------------------------------------------
    def label(self, node: str, **labels: str | None) -> None:
        self.core.patch_node(node, {"metadata": {"labels": labels}})

    def taint(self, node: str, *taints: dict) -> None:
        self.core.patch_node(node, {"spec": {"taints": list(taints) or None}})

    # --- pods -----------------------------------------------------------------------------------
    def pod(self, name: str, *, gpus: str | None = None, resource: str = "nvidia.com/gpu",
            node_selector: dict | None = None, tolerations: list | None = None, affinity: dict | None = None,
            namespace: str = "default", image: str = PAUSE, wait: str | None = "Running") -> dict:
        """A pod (with the device plugin's allocation answer ready when it asks for GPUs), waited to ``wait``."""
        container = {"name": "main", "image": image}
        annotations = {}
        if gpus is not None:
            container["resources"] = {"limits": {resource: gpus}}
            annotations["gpulab.dev/device-allocation"] = json.dumps(
                {"containers": {"main": {"devices": {resource: ["GPU-fake"]}, "env": {}}}})
        spec = {"containers": [container], "terminationGracePeriodSeconds": 0}
        for key, value in (("nodeSelector", node_selector), ("tolerations", tolerations), ("affinity", affinity)):
            if value is not None:
                spec[key] = value
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations},
                "spec": spec}
        self.core.create_namespaced_pod(namespace, body)
        if wait == "Running":
            assert eventually(lambda: self.core.read_namespaced_pod(name, namespace).status.phase == "Running"), \
                f"pod {name} did not start"
        elif wait == "Unschedulable":
            assert eventually(lambda: any(c.type == "PodScheduled" and c.reason == "Unschedulable" for c in
                                          self.core.read_namespaced_pod(name, namespace).status.conditions or [])), \
                f"pod {name} was not reported unschedulable"
        return body

    @contextmanager
    def device_plugin(self):
        """While active, answer Allocate for every bound pod asking for NVIDIA resources (as the plugin emulation)."""
        from kubernetes.client import ApiException

        from gpulab.checks.kube import requested_resources

        stop = threading.Event()

        def allocate() -> None:
            while not stop.is_set():
                pods = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)["items"]
                for pod in pods:
                    meta = pod["metadata"]
                    wanted = requested_resources(pod)
                    if not pod["spec"].get("nodeName") or not wanted or \
                            "gpulab.dev/device-allocation" in (meta.get("annotations") or {}):
                        continue
                    answer = {"containers": {c["name"]: {"devices": {r: ["GPU-fake"] for r in wanted}, "env": {}}
                                             for c in pod["spec"]["containers"]}}
                    try:
                        self.core.patch_namespaced_pod(meta["name"], meta["namespace"], {"metadata": {
                            "annotations": {"gpulab.dev/device-allocation": json.dumps(answer)}}})
                    except ApiException as exc:   # deleted meanwhile
                        assert exc.status == 404
                stop.wait(0.2)

        thread = threading.Thread(target=allocate, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()

    def delete_pods(self, *names: str, namespace: str = "default") -> None:
        from kubernetes.client import ApiException

        for name in names:
            try:
                self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
            except ApiException as exc:
                assert exc.status == 404
        for name in names:
            assert eventually(lambda: not [p for p in self.core.list_namespaced_pod(namespace).items
                                           if p.metadata.name == name]), f"pod {name} was not deleted"


def run(stack: FakeGpuStack, check_id: str, answer=None):
    from gpulab import checks

    return checks.run(check_id, checks.NO_ANSWER if answer is None else answer, client=stack.api)


# --- unit tests of the pure helpers -------------------------------------------------------------------

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


@pytest.mark.parametrize("toleration, expected", [
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, True),
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),                    # empty effect: every effect
    ({"operator": "Exists"}, True),                                             # empty key + Exists: everything
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, True),
    ({"key": "nvidia.com/gpu", "value": "true"}, True),                         # operator defaults to Equal
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "yes"}, False),
    ({"key": "nvidia.com/gpu", "operator": "Equal"}, False),                    # Equal with no value: value ""
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "gpu", "operator": "Exists"}, False),
    ({"key": "nvidia.com/gpu", "operator": "Gt", "value": "0"}, False),         # alpha operators: feature gate off
])
def test_tolerates_follows_toleratestaint(toleration, expected):
    assert tolerates(toleration, GPU_TAINT) is expected


def test_taint_and_toleration_text_as_kubectl_describe_prints_them():
    assert taint_text(GPU_TAINT) == "nvidia.com/gpu=true:NoSchedule"
    assert taint_text({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}) == \
        "node-role.kubernetes.io/control-plane:NoSchedule"
    assert toleration_text({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}) == \
        "nvidia.com/gpu:NoSchedule op=Exists"
    assert toleration_text({"operator": "Exists"}) == "op=Exists"
    assert toleration_text({"key": "nvidia.com/gpu", "value": "yes", "effect": "NoSchedule"}) == \
        "nvidia.com/gpu=yes:NoSchedule"
    assert toleration_text({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": 300}) == "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s"


def test_scheduler_reasons_parse_fiterror_messages():
    message = ("0/4 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 2 node(s) had "
               "untolerated taint(s). preemption: 0/4 nodes are available: 4 Preemption is not helpful for "
               "scheduling.")
    assert scheduler_reasons(message) == {"node(s) didn't match Pod's node affinity/selector": 2,
                                          "node(s) had untolerated taint(s)": 2}
    assert scheduler_reasons("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 Insufficient cpu.") == \
        {"Insufficient nvidia.com/gpu": 1, "Insufficient cpu": 2}
    assert scheduler_reasons("pod has unbound immediate PersistentVolumeClaims") == {}


def test_pod_request_sums_containers_and_reads_limits_or_requests():
    pod = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}},
                                   {"resources": {"requests": {"nvidia.com/gpu": "2"},
                                                  "limits": {"nvidia.com/gpu": "2"}}}],
                    "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}
    assert pod_request(pod, "nvidia.com/gpu") == Decimal(4)      # the init container's 4 > 1 + 2
    assert pod_request({"spec": {"containers": [{}]}}, "nvidia.com/gpu") == 0


def test_answers_are_read_generously():
    assert [answers.as_int(a) for a in (12, "12", " 12 ", 12.0, "12.0")] == [12] * 5
    assert [answers.as_int(a) for a in (True, 12.5, "twelve", None)] == [None] * 4
    assert answers.normalise(' "Insufficient  nvidia.com/gpu." ') == "insufficient nvidia.com/gpu"
    assert answers.words("3 node(s) had untolerated taint(s)") == "node had untolerated taint"
    options = {"a": ("first",), "b": ("second",)}
    assert [answers.choice(a, options) for a in ("b", "(B)", "b)", " Second ", "c")] == ["b", "b", "b", "b", None]


def test_gpu_family_from_gfd_product_labels():
    assert [family(p) for p in ("NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-40GB-SHARED",
                                "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "Tesla-T4", None)] == \
        ["h100", "a100", "h100", "t4", None]
