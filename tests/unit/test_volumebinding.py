"""The VolumeBinding decisions (gpulab.cluster.volumebinding) the scheduler's plugin and the volume controller
share, and the quota evaluators (gpulab.cluster.quota)."""
from __future__ import annotations

from fractions import Fraction

from gpulab.cluster import quota
from gpulab.cluster import volumebinding as vb

NODE_A = {"metadata": {"name": "a", "labels": {"kubernetes.io/hostname": "a"}}}
NODE_B = {"metadata": {"name": "b", "labels": {"kubernetes.io/hostname": "b"}}}
WFFC = {"metadata": {"name": "standard"}, "provisioner": "rancher.io/local-path",
        "volumeBindingMode": "WaitForFirstConsumer"}
IMMEDIATE = {"metadata": {"name": "manual"}, "provisioner": "kubernetes.io/no-provisioner",
             "volumeBindingMode": "Immediate"}
CLASSES = {"standard": WFFC, "manual": IMMEDIATE}


def claim(name: str, cls: str = "standard", size: str = "1Gi", **spec) -> dict:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"storageClassName": cls, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": size}}, **spec}}


def volume(name: str, cls: str = "standard", size: str = "5Gi", node: str | None = None, **spec) -> dict:
    pv = {"metadata": {"name": name}, "status": {"phase": "Available"},
          "spec": {"storageClassName": cls, "accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}, **spec}}
    if node:
        pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    return pv


def pod(*claims: str) -> dict:
    return {"metadata": {"name": "p", "namespace": "default"},
            "spec": {"volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]}}


def test_smallest_fitting_volume_and_prebound_first():
    volumes = [volume("big", size="10Gi"), volume("small", size="2Gi"), volume("tiny", size="100Mi")]
    assert vb.find_matching_volume(claim("c"), volumes)["metadata"]["name"] == "small"
    prebound = volume("mine", size="10Gi", claimRef={"name": "c", "namespace": "default", "uid": "uid-c"})
    assert vb.find_matching_volume(claim("c"), volumes + [prebound])["metadata"]["name"] == "mine"
    assert vb.find_matching_volume(claim("c", accessModes=["ReadWriteMany"]), volumes) is None


def test_filter_reasons_as_the_scheduler_gives_them():
    claims = {"wait": claim("wait"), "now": claim("now", cls="manual")}
    assert vb.check_pod_volumes(pod("absent"), NODE_A, claims, {}, CLASSES).reasons == \
        ['persistentvolumeclaim "absent" not found']
    unbound = vb.check_pod_volumes(pod("now"), NODE_A, claims, {}, CLASSES)
    assert (unbound.feasible, unbound.unresolvable, unbound.reasons) == \
        (False, True, ["pod has unbound immediate PersistentVolumeClaims"])
    provision = vb.check_pod_volumes(pod("wait"), NODE_A, claims, {}, CLASSES)
    assert provision.feasible and provision.provision == ["wait"]
    assert vb.selected_node_patch("a") == {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "a"}}}
    bound = {"b-only": volume("b-only", node="b")}
    claims["bound"] = claim("bound", volumeName="b-only")
    assert vb.check_pod_volumes(pod("bound"), NODE_A, claims, bound, CLASSES).reasons == \
        ["node(s) had volume node affinity conflict"]
    assert vb.check_pod_volumes(pod("bound"), NODE_B, claims, bound, CLASSES).feasible
    static = {"local-a": volume("local-a", node="a")}
    classes = {"standard": {**WFFC, "provisioner": "kubernetes.io/no-provisioner"}}
    assert vb.check_pod_volumes(pod("wait"), NODE_A, claims, static, classes).static == {"wait": "local-a"}
    assert vb.check_pod_volumes(pod("wait"), NODE_B, claims, static, classes).reasons == \
        ["node(s) didn't find available persistent volumes to bind"]


def test_pod_quota_usage_counts_extended_resources_as_requests():
    gpu_pod = {"metadata": {"name": "p", "namespace": "default"}, "status": {"phase": "Running"},
               "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                                                    "limits": {"nvidia.com/gpu": "2", "cpu": "1"}}}]}}
    gpu_pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2"
    usage = quota.usage("pods", gpu_pod, 0)
    assert usage == {"count/pods": 1, "pods": 1, "cpu": Fraction(1, 2), "requests.cpu": Fraction(1, 2),
                     "limits.cpu": 1, "memory": 2 ** 30, "requests.memory": 2 ** 30, "requests.nvidia.com/gpu": 2}
    done = {**gpu_pod, "status": {"phase": "Succeeded"}}
    assert quota.usage("pods", done, 0) == {"count/pods": 1}
    assert quota.pod_constraints({"limits.memory", "requests.nvidia.com/gpu"}, gpu_pod) == \
        "must specify limits.memory for: c"
    best_effort = {"spec": {"scopes": ["BestEffort"]}, "status": {"hard": {"pods": "3"}}}
    assert not quota.matches(best_effort, "pods", gpu_pod)
