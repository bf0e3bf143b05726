"""The kubelet's own HTTPS API on port 10250, as ``nodes/proxy`` reaches it (pkg/kubelet/server/server.go).

Served: ``/healthz`` (``ok``), ``/pods`` (the pods bound to the node, as the kubelet's pod manager holds
them: a ``v1`` PodList whose items carry no kind) and ``/configz`` (the kubelet's configuration under
``kubeletconfig``, with the values this node agent runs by). Anything else answers as Go's default mux
does, ``404 page not found``; the metrics and stats endpoints are not emulated.
"""
from __future__ import annotations

import orjson

from ..gofmt import go_duration
from .serving import Request, Response

_NOT_FOUND = Response(404, [("Content-Type", "text/plain; charset=utf-8"), ("X-Content-Type-Options", "nosniff")],
                      b"404 page not found\n")


def respond(agent, node: dict, pods: list[dict], request: Request) -> Response:
    path = request.path.rstrip("/") or "/"
    if path == "/healthz":
        return Response(200, [("Content-Type", "text/plain; charset=utf-8")], b"ok")
    if path == "/pods":
        items = [{k: v for k, v in pod.items() if k not in ("kind", "apiVersion")} for pod in pods]
        return _json({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
    if path == "/configz":
        return _json({"kubeletconfig": _config(agent, node)})
    return _NOT_FOUND


def _json(obj) -> Response:
    return Response(200, [("Content-Type", "application/json")], orjson.dumps(obj))


def _config(agent, node: dict) -> dict:
    """KubeletConfiguration as kind's kubeadm writes it, with the timings of data/lifecycle.yaml."""
    t = agent.lifecycle.timings
    scale = t.scale or 1.0
    return {
        "enableServer": True, "staticPodPath": "/etc/kubernetes/manifests", "podLogsDir": "/var/log/pods",
        "syncFrequency": "1m0s", "fileCheckFrequency": "20s", "httpCheckFrequency": "20s",
        "address": "0.0.0.0", "port": 10250, "tlsCertFile": "/var/lib/kubelet/pki/kubelet.crt",
        "tlsPrivateKeyFile": "/var/lib/kubelet/pki/kubelet.key", "rotateCertificates": True,
        "authentication": {"x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
                           "webhook": {"enabled": True, "cacheTTL": "2m0s"}, "anonymous": {"enabled": False}},
        "authorization": {"mode": "Webhook", "webhook": {"cacheAuthorizedTTL": "5m0s",
                                                         "cacheUnauthorizedTTL": "30s"}},
        "clusterDomain": "cluster.local", "clusterDNS": ["10.96.0.10"],
        "nodeStatusUpdateFrequency": go_duration(t.node_status_update / scale),
        "nodeStatusReportFrequency": go_duration(t.node_status_report / scale),
        "nodeLeaseDurationSeconds": t.lease_duration,
        "imageMinimumGCAge": "2m0s", "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 80,
        "cgroupRoot": "/kubelet", "cgroupsPerQOS": True, "cgroupDriver": "systemd", "cpuManagerPolicy": "none",
        "memoryManagerPolicy": "None", "topologyManagerPolicy": "none", "maxPods": int(((node.get("status") or {}).get("capacity") or {}).get("pods", 110)),
        "podPidsLimit": -1, "evictionHard": {"imagefs.available": "0%", "nodefs.available": "0%",
                                             "nodefs.inodesFree": "0%"},
        "failSwapOn": False, "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
    }
