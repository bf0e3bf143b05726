"""``kubectl top`` on a cluster without metrics-server: the Metrics API is not in discovery, and kubectl says so.

A cluster answers ``kubectl top`` only once something serves ``metrics.k8s.io`` (metrics-server, through an
APIService); before that, kubectl 1.37 finds no ``metrics.k8s.io`` group with a version it supports in
discovery and stops with ``error: Metrics API not available`` (k8s.io/kubectl ``pkg/cmd/top/top_node.go``,
``top_pod.go``, ``SupportedMetricsAPIVersionAvailable`` in ``top.go``). Neither engine serves the Metrics API
(docs/engines.md, "kubectl top and the Metrics API", says why), so both must answer as that cluster does.
"""
from __future__ import annotations

import json

import pytest

from .conftest import start_cluster, stop_cluster

pytestmark = pytest.mark.xdist_group("kubectl-top")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, engine):
    c = start_cluster(tmp_path_factory.mktemp("kubectl-top"), engine=engine, gpu_stack=False)
    yield c
    stop_cluster(c)


@pytest.mark.parametrize("args", [("top", "nodes"), ("top", "node", "gpulab-worker"), ("top", "pods", "-A"),
                                  ("top", "pods", "-n", "kube-system")])
def test_top_without_metrics_server_says_the_metrics_api_is_not_available(cluster, args):
    top = cluster.kubectl(*args, check=False)
    assert (top.returncode, top.stdout, top.stderr) == (1, "", "error: Metrics API not available\n")


def test_the_metrics_group_is_neither_discovered_nor_served(cluster):
    groups = json.loads(cluster.kubectl("get", "--raw", "/apis").stdout)["groups"]
    assert "metrics.k8s.io" not in [g["name"] for g in groups]
    raw = cluster.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes", check=False)
    assert raw.returncode == 1
    assert raw.stderr == "Error from server (NotFound): the server could not find the requested resource\n"
