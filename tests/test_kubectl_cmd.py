"""What Kubernetes' own kubectl command tests (``test/cmd``, run in full by ``tools/kubectl_cmd_tests.py``) found on
the embedded cluster, held through kubectl on both engines, and two of those upstream functions run as they are."""
from __future__ import annotations

import subprocess
import sys

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tools import kubectl_cmd_tests

from .conftest import ROOT, start_cluster, stop_cluster, wait_for

CONFIGMAP = """{{"apiVersion": "v1", "kind": "ConfigMap",
 "metadata": {{"name": "replaced", "resourceVersion": "{rv}"}}, "data": {{"k": "{value}"}}}}"""


@pytest.fixture(scope="module")
def cluster(engine, tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("kubectl-cmd"), engine=engine, gpu_stack=False)
    yield c
    stop_cluster(c)


def test_replace_with_resource_version_zero_is_unconditional(cluster):
    """core.sh replaces a Node with ``"resourceVersion": "0"``: the store reads 0 as "no version given" and
    updates the latest object; any other stale version is a conflict."""
    cluster.kubectl("create", "configmap", "replaced", "--from-literal=k=v1")
    cluster.kubectl("replace", "-f", "-", input=CONFIGMAP.format(rv="0", value="v2"))
    assert cluster.kubectl("get", "configmap", "replaced", "-o", "jsonpath={.data.k}").stdout == "v2"
    stale = cluster.kubectl("replace", "-f", "-", input=CONFIGMAP.format(rv="1", value="v3"), check=False)
    assert stale.returncode == 1
    assert "the object has been modified" in stale.stderr
    assert cluster.kubectl("get", "configmap", "replaced", "-o", "jsonpath={.data.k}").stdout == "v2"


def test_a_node_created_through_the_api_gets_the_next_free_pod_cidr(cluster):
    """core.sh creates Node ``node-v1-test`` and replaces it without CIDRs: on kind (and upstream's test server
    without --allocate-node-cidrs it would not be) the controller-manager has given it a /24 of 10.244.0.0/16
    meanwhile, and a Node's pod CIDRs cannot be taken away."""
    taken = set(cluster.kubectl("get", "nodes", "-o", "jsonpath={.items[*].spec.podCIDR}").stdout.split())
    cluster.kubectl("create", "-f", "-", input='{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "by-hand"}}')
    cidr = wait_for(lambda: cluster.kubectl("get", "node", "by-hand", "-o", "jsonpath={.spec.podCIDR}").stdout,
                    timeout=30, what="the node's pod CIDR")
    assert cidr.startswith("10.244.") and cidr.endswith(".0/24") and cidr not in taken
    assert cluster.kubectl("get", "node", "by-hand", "-o", "jsonpath={.spec.podCIDRs}").stdout == f'["{cidr}"]'
    replaced = cluster.kubectl("replace", "-f", "-", check=False,
                               input='{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "by-hand", '
                                     '"resourceVersion": "0", "annotations": {"a": "b"}}}')
    assert replaced.returncode == 1
    assert 'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid' in replaced.stderr
    cluster.kubectl("delete", "node", "by-hand")


def test_default_kube_system_and_kube_public_may_not_be_deleted(cluster):
    """core.sh deletes ``namespace --all`` and expects kubectl to fail: NamespaceLifecycle admission keeps the
    three namespaces the cluster cannot do without, and any other namespace goes."""
    cluster.kubectl("create", "namespace", "mortal")
    out = cluster.kubectl("delete", "namespace", "default", "kube-system", "kube-public", "mortal", "--wait=false",
                          check=False)
    assert out.returncode == 1
    for name in ("default", "kube-system", "kube-public"):
        assert (f'Error from server (Forbidden): namespaces "{name}" is forbidden: this namespace may not be deleted'
                in out.stderr)
    assert 'namespace "mortal" deleted' in out.stdout
    phases = cluster.kubectl("get", "namespaces", "default", "kube-system", "kube-public",
                             "-o", "jsonpath={.items[*].status.phase}").stdout
    assert phases == "Active Active Active"


@pytest.mark.parametrize("ip, why", [
    ("10.0.0.12", "the provided network does not match the current range"),
    ("10.96.255.255", "the provided network does not match the current range"),
    ("10.96.0.1", "provided IP is already allocated"),
])
def test_a_cluster_ip_outside_the_range_or_taken_is_refused(cluster, ip, why):
    """apply.sh gives a Service ``clusterIP: 10.0.0.12``, inside upstream's test range (10.0.0.0/24) and outside
    kind's (10.96.0.0/16): the allocator refuses it, as the range's broadcast address or one in use."""
    out = cluster.kubectl("create", "service", "clusterip", "fixed", f"--clusterip={ip}", "--tcp=80", check=False)
    assert out.returncode == 1
    assert (f'Service "fixed" is invalid: spec.clusterIPs: Invalid value: ["{ip}"]: failed to allocate IP {ip}: '
            f'{why}') in out.stderr
    cluster.kubectl("create", "service", "clusterip", "fixed", "--clusterip=10.96.200.7", "--tcp=80")
    assert cluster.kubectl("get", "service", "fixed", "-o", "jsonpath={.spec.clusterIP}").stdout == "10.96.200.7"
    cluster.kubectl("delete", "service", "fixed")


DEPRECATED_CRD = """{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
 "metadata": {"name": "deprecated.example.com"},
 "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "deprecated", "kind": "DeprecatedKind"},
  "versions": [
   {"name": "v1", "served": true, "storage": true,
    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
   {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}"""


def test_a_deprecated_crd_version_warns_on_every_request(cluster):
    """get.sh: a request to a CRD version marked deprecated gets the warning ``<group>/<version> <Kind> is
    deprecated``, with the newer served version to use; ``--warnings-as-errors`` makes it fail."""
    cluster.kubectl("create", "-f", "-", input=DEPRECATED_CRD)
    cluster.kubectl("wait", "--for=condition=Established", "crd/deprecated.example.com", "--timeout=60s")
    wait_for(lambda: "deprecated.example.com" in cluster.kubectl("api-resources", "--api-group=example.com",
                                                                 "-o", "name").stdout, timeout=30, what="discovery")
    old = cluster.kubectl("get", "deprecated.v1beta1.example.com")
    assert "Warning: example.com/v1beta1 DeprecatedKind is deprecated; use example.com/v1 DeprecatedKind" in old.stderr
    strict = cluster.kubectl("get", "deprecated.v1beta1.example.com", "--warnings-as-errors", check=False)
    assert strict.returncode == 1
    assert "error: 1 warning received" in strict.stderr
    assert "Warning" not in cluster.kubectl("get", "deprecated.v1.example.com").stderr
    cluster.kubectl("delete", "crd", "deprecated.example.com")


def test_scale_dry_run_stores_nothing_and_a_stale_version_conflicts(cluster):
    """core.sh and apps.sh scale with ``--dry-run=server`` and ``--current-replicas``: the Scale subresource
    honours the dry run and the resourceVersion it is sent."""
    cluster.kubectl("create", "deployment", "scaled", "--image=busybox", "--replicas=1")
    dry = cluster.kubectl("scale", "deployment/scaled", "--replicas=4", "--dry-run=server")
    assert dry.stdout.strip() == "deployment.apps/scaled scaled (server dry run)"
    replicas = ("get", "deployment", "scaled", "-o", "jsonpath={.spec.replicas}")
    assert cluster.kubectl(*replicas).stdout == "1"
    # kubectl checks --resource-version itself; the official client sends a stale one to the server
    apps = client.AppsV1Api(cluster.client())
    stale = {"metadata": {"name": "scaled", "namespace": "default", "resourceVersion": "1"}, "spec": {"replicas": 3}}
    with pytest.raises(ApiException) as err:
        apps.replace_namespaced_deployment_scale("scaled", "default", stale)
    assert err.value.status == 409
    assert "the object has been modified" in err.value.body
    cluster.kubectl("scale", "deployment/scaled", "--replicas=2", "--current-replicas=1")
    assert cluster.kubectl(*replicas).stdout == "2"


def test_a_schedule_that_never_fires_is_an_invalid_schedule_event(cluster):
    """events.sh: a CronJob for 31 February parses, but the controller finds no two activations a second apart
    and says so in an ``InvalidSchedule`` warning (cronjob_controllerv2.go), starting no Job."""
    cluster.kubectl("create", "cronjob", "never", "--schedule=59 23 31 2 *", "--image=busybox", "--", "true")

    def invalid_schedule():
        out = cluster.kubectl("events", "--for=cronjob/never", "--types=Warning").stdout
        return out if "InvalidSchedule" in out else None

    out = wait_for(invalid_schedule, timeout=60, what="the InvalidSchedule event")
    assert "invalid schedule: 59 23 31 2 * : time difference between two schedules is less than 1 second" in out
    assert cluster.kubectl("get", "jobs", "-o", "name").stdout == ""


@pytest.mark.skipif(not kubectl_cmd_tests.KUBERNETES.is_dir(), reason="k8s.io/kubernetes is not in the module cache")
def test_two_test_cmd_functions_pass_on_the_embedded_cluster():
    """Two of upstream's own functions, unchanged, through the runner: results reporting and the categories
    discovery publishes."""
    functions = ["run_kubectl_results_tests", "run_assert_categories_tests"]
    proc = subprocess.run([sys.executable, "-m", "tools.kubectl_cmd_tests", "--engine", "embedded", "--only",
                           *functions], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "embedded: 2/2 functions passed" in proc.stdout
