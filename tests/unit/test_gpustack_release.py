"""The helm-like release: rendered objects, the release Secret, the summary (gpulab.gpustack.install)."""
import base64
import gzip
import json
from datetime import datetime, timezone

from gpulab.gpustack.operator import CLUSTERPOLICIES
from gpulab.gpustack.chart import values_for
from gpulab.gpustack.install import Release, _release_secret, render, summary


def test_rendered_objects():
    objects = render(values_for("v25.10.1"), "v25.10.1", "gpu-operator", "gpu-operator")
    names = [(r.plural, o["metadata"]["name"]) for r, o in objects]
    assert names == [("serviceaccounts", "gpu-operator"), ("serviceaccounts", "node-feature-discovery"),
                     ("configmaps", "gpu-operator-node-feature-discovery-worker-conf"),
                     ("deployments", "gpu-operator-node-feature-discovery-master"),
                     ("daemonsets", "gpu-operator-node-feature-discovery-worker"),
                     ("deployments", "gpu-operator-node-feature-discovery-gc"),
                     ("deployments", "gpu-operator"), ("clusterpolicies", "cluster-policy")]
    operator = objects[6][1]["spec"]["template"]["spec"]
    assert operator["containers"][0]["image"] == "nvcr.io/nvidia/gpu-operator:v25.10.1"
    assert operator["priorityClassName"] == "system-node-critical"
    worker = objects[4][1]["spec"]["template"]["spec"]
    assert worker["containers"][0]["image"] == "registry.k8s.io/nfd/node-feature-discovery:v0.18.2"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in worker["tolerations"]
    assert objects[7][0] is CLUSTERPOLICIES


def test_release_secret_is_helms_format():
    rel = Release("gpu-operator", "gpu-operator", 1, "v25.10.1", {"driver": {"version": "580.105.08"}},
                  datetime(2025, 11, 29, 12, 0, tzinfo=timezone.utc))
    secret = _release_secret(rel, rel.deployed, "Install complete")
    assert secret["type"] == "helm.sh/release.v1"
    assert secret["metadata"]["name"] == "sh.helm.release.v1.gpu-operator.v1"
    assert {k: secret["metadata"]["labels"][k] for k in ("name", "owner", "status", "version")} == {
        "name": "gpu-operator", "owner": "helm", "status": "deployed", "version": "1"}
    doc = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"]))))
    assert doc["config"] == {"driver": {"version": "580.105.08"}}
    assert doc["chart"]["metadata"]["version"] == "v25.10.1" and doc["info"]["status"] == "deployed"


def test_summary_is_helms():
    rel = Release("gpu-operator", "gpu-operator", 2, "v25.10.1", {}, datetime(2025, 11, 3, 9, 5, 7))
    assert summary(rel) == ("NAME: gpu-operator\nLAST DEPLOYED: Mon Nov  3 09:05:07 2025\nNAMESPACE: gpu-operator\n"
                            "STATUS: deployed\nREVISION: 2\nTEST SUITE: None\n")
