"""What a learner sees of the cluster itself, as on kind: kube-system's add-ons and control-plane pods,
`kubectl cluster-info`, the health endpoints, and watches as older clients ask for them (issue 12 item 5)."""
from __future__ import annotations

import json
import re

from .conftest import wait_for
from .responsiveness import Api

CONTROL_PLANE = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]


def _running(kubectl) -> list[str]:
    pods = json.loads(kubectl("get", "pods", "-n", "kube-system", "-o", "json").stdout)["items"]
    return sorted(p["metadata"]["name"] for p in pods if p["status"].get("phase") == "Running")


def test_kube_system_holds_what_kind_puts_there(cluster, kubectl):
    nodes = kubectl("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
    expected = 2 + len(nodes) + len(CONTROL_PLANE)  # CoreDNS, kube-proxy per node, the static pods
    running = wait_for(lambda: (lambda r: r if len(r) == expected else None)(_running(kubectl)), timeout=60,
                       what="kube-system pods running")
    assert [n for n in running if n.startswith("coredns-")] and len([n for n in running if
                                                                      n.startswith("kube-proxy-")]) == len(nodes)
    assert {f"{c}-gpulab-control-plane" for c in CONTROL_PLANE} <= set(running)
    out = kubectl("get", "pods", "-A").stdout
    assert re.search(r"kube-system\s+etcd-gpulab-control-plane\s+1/1\s+Running", out)
    deploy = json.loads(kubectl("get", "deploy", "coredns", "-n", "kube-system", "-o", "json").stdout)
    assert deploy["spec"]["replicas"] == 2 and deploy["metadata"]["labels"] == {"k8s-app": "kube-dns"}
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"].startswith("registry.k8s.io/coredns/coredns:")
    proxy = json.loads(kubectl("get", "ds", "kube-proxy", "-n", "kube-system", "-o", "json").stdout)
    version = json.loads(kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    assert proxy["spec"]["template"]["spec"]["containers"][0]["image"] == f"registry.k8s.io/kube-proxy:{version}"


def test_control_plane_pods_are_mirror_pods_of_the_node(kubectl):
    pod = json.loads(kubectl("get", "pod", "-n", "kube-system", "kube-apiserver-gpulab-control-plane", "-o",
                             "json").stdout)
    meta = pod["metadata"]
    assert meta["labels"] == {"component": "kube-apiserver", "tier": "control-plane"}
    assert meta["annotations"]["kubernetes.io/config.source"] == "file"
    assert meta["annotations"]["kubernetes.io/config.mirror"] == meta["annotations"]["kubernetes.io/config.hash"]
    assert meta["annotations"]["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"].endswith(":6443")
    assert [(o["kind"], o["name"], o["controller"]) for o in meta["ownerReferences"]] == \
        [("Node", "gpulab-control-plane", True)]
    assert pod["spec"]["nodeName"] == "gpulab-control-plane" and pod["spec"]["priorityClassName"] == \
        "system-node-critical"


def test_cluster_info_names_coredns(cluster, kubectl):
    out = kubectl("cluster-info").stdout
    server = cluster.kubectl("config", "view", "-o", "jsonpath={.clusters[0].cluster.server}").stdout
    assert f"Kubernetes control plane is running at {server}" in out
    assert f"CoreDNS is running at {server}/api/v1/namespaces/kube-system/services/kube-dns:dns/proxy" in out
    svc = json.loads(kubectl("get", "svc", "kube-dns", "-n", "kube-system", "-o", "json").stdout)
    assert svc["spec"]["clusterIP"] == "10.96.0.10"
    assert [(p["name"], p["port"], p["protocol"]) for p in svc["spec"]["ports"]] == \
        [("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"), ("metrics", 9153, "TCP")]


def test_health_endpoints_list_kube_apiservers_checks(kubectl):
    ready = kubectl("get", "--raw", "/readyz?verbose").stdout.splitlines()
    assert ready[:5] == ["[+]ping ok", "[+]log ok", "[+]etcd ok", "[+]etcd-readiness ok", "[+]informer-sync ok"]
    assert "[+]poststarthook/rbac/bootstrap-roles ok" in ready and ready[-2:] == ["[+]shutdown ok",
                                                                                 "readyz check passed"]
    live = kubectl("get", "--raw", "/livez?verbose&exclude=etcd").stdout.splitlines()
    assert "[+]etcd excluded: ok" in live and live[-1] == "livez check passed"
    assert "[+]shutdown ok" not in live and "[+]informer-sync ok" not in live
    assert kubectl("get", "--raw", "/healthz/etcd").stdout == "ok"
    assert kubectl("get", "--raw", "/readyz/poststarthook/rbac/bootstrap-roles").stdout == "ok"
    assert kubectl("get", "--raw", "/healthz").stdout == "ok"
    assert kubectl("get", "--raw", "/livez/nothing", check=False).returncode == 1


def test_watch_true_as_the_python_client_before_v37_sends_it(cluster):
    api = Api(cluster)
    reply = api.request("GET", "/api/v1/namespaces/kube-system/services?watch=True&timeoutSeconds=1")
    events = [json.loads(line) for line in reply.body.splitlines()]
    assert events and all(e["type"] == "ADDED" for e in events)
    assert "kube-dns" in [e["object"]["metadata"]["name"] for e in events]
    reply = api.request("GET", "/api/v1/namespaces/kube-system/services?watch=false")
    assert reply.json["kind"] == "ServiceList"


def test_error_bodies_as_go_encodes_them(cluster):
    reply = Api(cluster).request("GET", "/api/v1/namespaces/default/configmaps/absent")
    assert reply.body == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
                          b'"configmaps \\"absent\\" not found","reason":"NotFound","details":{"name":"absent",'
                          b'"kind":"configmaps"},"code":404}\n')
