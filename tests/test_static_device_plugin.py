"""NVIDIA's static device plugin on a node without the driver logs what upstream's does, through the real kubectl.

k8s-device-plugin v0.18.1 (``deployments/static/nvidia-device-plugin.yml``, ``cmd/nvidia-device-plugin/main.go``,
``internal/plugin/factory.go``): with no NVML library the ``auto`` discovery strategy resolves no platform; failing
on that error (the flag's default) it exits 1 and crash-loops; with ``FAIL_ON_INIT_ERROR=false`` (the v0.15-v0.17
static manifests) it finds no devices and waits. Sources: docs/fidelity.md#gpustack.
"""
from __future__ import annotations

import json
import re

import pytest

from .conftest import wait_for

MANIFEST = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-device-plugin-daemonset, namespace: kube-system}
spec:
  selector: {matchLabels: {name: nvidia-device-plugin-ds}}
  template:
    metadata: {labels: {name: nvidia-device-plugin-ds}}
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      priorityClassName: system-node-critical
      containers:
      - image: nvcr.io/nvidia/k8s-device-plugin:v0.18.1
        name: nvidia-device-plugin-ctr
        env: ENV
        volumeMounts: [{name: kubelet-device-plugins-dir, mountPath: /var/lib/kubelet/device-plugins}]
      volumes: [{name: kubelet-device-plugins-dir, hostPath: {path: /var/lib/kubelet/device-plugins, type: Directory}}]
"""
START = """\
I 1 main.go:244] "Starting NVIDIA Device Plugin" version=<
\tdfcf7283
\tcommit: dfcf72838b8839c7a0fd9bc9d21fe8d46bed2111
 >
I 1 main.go:247] Starting FS watcher for /var/lib/kubelet/device-plugins
I 1 main.go:254] Starting OS watcher.
I 1 main.go:269] Starting Plugins.
I 1 main.go:326] Loading configuration.
I 1 main.go:352] Updating config with default resource matching patterns.
I 1 main.go:363] \nRunning with config:
{
  "version": "v1",
  "flags": {
    "migStrategy": "none",
    "failOnInitError": FAIL,
    "mpsRoot": "",
    "nvidiaDriverRoot": "/",
    "nvidiaDevRoot": "/",
    "gdrcopyEnabled": false,
    "gdsEnabled": false,
    "mofedEnabled": false,
    "useNodeFeatureAPI": null,
    "deviceDiscoveryStrategy": "auto",
    "plugin": {
      "passDeviceSpecs": false,
      "deviceListStrategy": [
        "envvar"
      ],
      "deviceIDStrategy": "uuid",
      "cdiAnnotationPrefix": "cdi.k8s.io/",
      "nvidiaCTKPath": "/usr/bin/nvidia-ctk",
      "containerDriverRoot": "/driver-root"
    }
  },
  "resources": {
    "gpus": [
      {
        "pattern": "*",
        "name": "nvidia.com/gpu"
      }
    ]
  },
  "sharing": {
    "timeSlicing": {}
  },
  "imex": {}
}
I 1 main.go:366] Retrieving plugins.
E 1 factory.go:113] Incompatible strategy detected auto
E 1 factory.go:114] If this is a GPU node, did you configure the NVIDIA Container Toolkit?
E 1 factory.go:115] You can check the prerequisites at: https://github.com/NVIDIA/k8s-device-plugin#prerequisites
E 1 factory.go:116] You can learn how to set the runtime at: https://github.com/NVIDIA/k8s-device-plugin#quick-start
E 1 factory.go:117] If this is not a GPU node, you should set up a toleration or nodeSelector to only deploy this \
plugin on GPU nodes
"""


def _cpu_worker_pod(kubectl) -> dict:
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    cpu_worker = next(n["metadata"]["name"] for n in nodes if n["metadata"]["name"].endswith("-worker"))
    pods = json.loads(kubectl("get", "pods", "-n", "kube-system", "-l", "name=nvidia-device-plugin-ds",
                              "--field-selector", f"spec.nodeName={cpu_worker}", "-o", "json").stdout)["items"]
    return next((p for p in pods if not p["metadata"].get("deletionTimestamp")), {})


def _log(kubectl, pod: dict) -> str:
    """The pod's log, each klog header's time left out (``I0822 10:00:00.123456       1`` reads ``I 1``)."""
    text = kubectl("logs", "-n", "kube-system", pod["metadata"]["name"], check=False).stdout
    return re.sub(r"^([IWE])\d{4} \d\d:\d\d:\d\d\.\d{6} +1 ", r"\1 1 ", text, flags=re.M)


@pytest.fixture
def plugin(cluster):
    def apply(env: str):
        cluster.kubectl("apply", "-f", "-", input=MANIFEST.replace("ENV", env))
        return wait_for(lambda: _cpu_worker_pod(cluster.kubectl), what="the plugin's pod on the CPU worker")
    yield apply
    cluster.kubectl("delete", "daemonset", "-n", "kube-system", "nvidia-device-plugin-daemonset")


def test_without_the_driver_the_plugin_logs_why_and_crash_loops(cluster, plugin):
    plugin("[]")
    expected = START.replace("FAIL", "true") + (
        "E 1 main.go:182] error starting plugins: error getting plugins: unable to create plugins: failed to "
        "construct resource managers: invalid device discovery strategy\n")
    wait_for(lambda: _log(cluster.kubectl, _cpu_worker_pod(cluster.kubectl)) == expected,
             what="the plugin's log")
    wait_for(lambda: ((_cpu_worker_pod(cluster.kubectl)["status"].get("containerStatuses") or [{}])[0]
                      .get("lastState", {}).get("terminated", {}).get("exitCode")) == 1,
             what="the plugin's container to exit 1")


def test_not_failing_on_init_errors_it_waits_indefinitely(cluster, plugin):
    plugin('[{name: FAIL_ON_INIT_ERROR, value: "false"}]')
    expected = START.replace("FAIL", "false") + "I 1 main.go:391] No devices found. Waiting indefinitely.\n"
    wait_for(lambda: _log(cluster.kubectl, _cpu_worker_pod(cluster.kubectl)) == expected, what="the plugin's log")
    pod = _cpu_worker_pod(cluster.kubectl)
    assert pod["status"]["phase"] == "Running" and pod["status"]["containerStatuses"][0]["restartCount"] == 0
