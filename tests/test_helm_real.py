"""Real Helm against the embedded cluster: install and uninstall a chart with CRDs, RBAC, a Deployment and hooks.

Helm here is Helm v4's own Go SDK (PyPI ``helm-python-sdk``, ``libhelm_c`` through ctypes), talking to the
cluster through the kubeconfig as the ``helm`` CLI does. The chart (``tests/data/helm-chart/gpulab-demo``) is
gpulab's own: a CRD in ``crds/``, a ServiceAccount, Role and RoleBinding, a Deployment, a custom resource of the
CRD, a pre-install ConfigMap hook, a post-install Job hook, and post-delete hooks (a Job deleted on success,
a ConfigMap that stays).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client as k8s

from .conftest import wait_for

helm = pytest.importorskip("helm_python", reason="helm-python-sdk is a test dependency: run `make install`")

CHART = Path(__file__).parent / "data" / "helm-chart" / "gpulab-demo"
pytestmark = pytest.mark.xdist_group("helm-real")


@pytest.fixture(scope="module")
def config(cluster):
    with helm.Config(kubeconfig_path=str(cluster.kubeconfig), namespace="default") as cfg:
        yield cfg


@pytest.fixture(scope="module")
def installed(cluster, config):
    release = config.install(str(CHART), "demo", {"replicas": 2}, wait="watcher", timeout=120)
    return release


def test_install_creates_the_crd_rbac_deployment_and_runs_the_hooks(cluster, config, installed):
    assert (installed["revision"], installed["status"]) == (1, "deployed")
    api = cluster.client()
    deployment = k8s.AppsV1Api(api).read_namespaced_deployment("demo-worker", "default")
    assert deployment.status.ready_replicas == 2      # --wait=watcher waited for it
    assert deployment.spec.template.spec.service_account_name == "demo-worker"
    rbac = k8s.RbacAuthorizationV1Api(api)
    assert rbac.read_namespaced_role("demo-widgets", "default").rules[0].resources == ["widgets"]
    assert rbac.read_namespaced_role_binding("demo-widgets", "default").subjects[0].name == "demo-worker"
    widget = k8s.CustomObjectsApi(api).get_namespaced_custom_object("demo.gpulab.dev", "v1", "default", "widgets",
                                                                     "demo-widget")
    assert widget["spec"] == {"size": 2}
    assert k8s.CoreV1Api(api).read_namespaced_config_map("demo-preinstall", "default").data == {
        "stage": "pre-install"}
    assert k8s.BatchV1Api(api).read_namespaced_job("demo-post-install", "default").status.succeeded == 1
    can_list = cluster.kubectl("auth", "can-i", "list", "widgets.demo.gpulab.dev",
                               "--as", "system:serviceaccount:default:demo-worker", check=False)
    assert can_list.stdout.strip() == "yes"
    secret = k8s.CoreV1Api(api).read_namespaced_secret("sh.helm.release.v1.demo.v1", "default")
    assert secret.type == "helm.sh/release.v1"
    assert (secret.metadata.labels["owner"], secret.metadata.labels["status"]) == ("helm", "deployed")
    assert [(r["name"], r["status"]) for r in config.list()] == [("demo", "deployed")]


def test_uninstall_removes_the_release_keeps_the_crd_and_runs_the_delete_hook(cluster, config, installed):
    result = config.uninstall("demo", wait="watcher", timeout=120)
    assert result["release"]["status"] == "uninstalled"
    api = cluster.client()
    names = [d.metadata.name for d in k8s.AppsV1Api(api).list_namespaced_deployment("default").items]
    assert "demo-worker" not in names
    assert cluster.kubectl("get", "rolebinding", "demo-widgets", check=False).returncode == 1
    # Helm never deletes crds/; hooks without a delete policy stay; the post-delete Job went on success
    assert cluster.kubectl("get", "crd", "widgets.demo.gpulab.dev").returncode == 0
    assert cluster.kubectl("get", "configmap", "demo-preinstall").returncode == 0
    assert cluster.kubectl("get", "configmap", "demo-uninstalled", "-o", "jsonpath={.data.stage}").stdout == (
        "post-delete")
    wait_for(lambda: cluster.kubectl("get", "job", "demo-post-delete", check=False).returncode == 1,
             what="the post-delete hook Job deleted after it succeeded")
    secrets = [s.metadata.name for s in k8s.CoreV1Api(api).list_namespaced_secret("default").items]
    assert "sh.helm.release.v1.demo.v1" not in secrets
    assert config.list() == []
