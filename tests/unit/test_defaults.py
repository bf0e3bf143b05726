"""Defaulting of the built-in kinds (pkg/apis/*/v1/defaults.go) and the strategy steps that need a uid."""
import copy

import pytest

from gpulab.cluster import errors
from gpulab.cluster.kinds import builtin_registry, strategy_for
from gpulab.cluster.kinds.jobs import generate_selector

REGISTRY = builtin_registry()


class CONTEXT:
    """A strategy's Context with nothing stored."""

    lookup = staticmethod(lambda key, name, namespace="": None)
    list = staticmethod(lambda key: [])
    clock = staticmethod(lambda: 0.0)


def defaulted(key: str, obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    strategy_for(REGISTRY.by_key(key)).default(obj)
    return obj


def test_pod_defaults():
    pod = defaulted("pods", {"metadata": {"name": "p", "namespace": "default"},
                             "spec": {"containers": [{"name": "c", "image": "nvidia/cuda:12.4.0-base",
                                                      "ports": [{"containerPort": 8080}],
                                                      "resources": {"limits": {"nvidia.com/gpu": 1,
                                                                               "memory": "1024Mi"}},
                                                      "livenessProbe": {"httpGet": {"port": 8080}}}]},
                             "status": {"phase": "Pending"}})
    spec = pod["spec"]
    assert {k: spec[k] for k in ("dnsPolicy", "restartPolicy", "schedulerName", "securityContext",
                                 "terminationGracePeriodSeconds", "enableServiceLinks")} == {
        "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
        "securityContext": {}, "terminationGracePeriodSeconds": 30, "enableServiceLinks": True}
    container = spec["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": "1", "memory": "1Gi"},
                                      "requests": {"nvidia.com/gpu": "1", "memory": "1Gi"}}
    assert container["livenessProbe"] == {"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
                                          "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                                          "failureThreshold": 3}
    strategy_for(REGISTRY.by_key("pods")).prepare_for_create(pod, CONTEXT)
    assert pod["status"] == {"phase": "Pending", "qosClass": "Burstable"}


@pytest.mark.parametrize("image, policy", [("busybox", "Always"), ("busybox:latest", "Always"),
                                           ("busybox:1.36", "IfNotPresent"), ("localhost:5000/app", "Always"),
                                           ("nvcr.io/nvidia/cuda@sha256:" + "a" * 64, "IfNotPresent"),
                                           ("Busybox", "IfNotPresent")])
def test_image_pull_policy(image, policy):
    pod = defaulted("pods", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": image}]}})
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == policy


@pytest.mark.parametrize("resources, qos", [
    ({}, "BestEffort"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}, "Burstable"),
    ({"limits": {"nvidia.com/gpu": "1"}}, "BestEffort"),
])
def test_qos_class_is_set_by_prepare_for_create(resources, qos):
    pod = defaulted("pods", {"metadata": {"name": "p"},
                             "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]}})
    strategy_for(REGISTRY.by_key("pods")).prepare_for_create(pod, CONTEXT)
    assert pod["status"]["qosClass"] == qos


def test_resource_quantities_are_rounded_to_milli_and_canonical():
    pod = defaulted("pods", {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "0.1m", "memory": "0.5Gi"}}}]}})
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1m", "memory": "512Mi"}


def test_bad_quantity_fails_like_decoding():
    with pytest.raises(errors.ApiError) as err:
        defaulted("pods", {"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "image": "x", "resources": {"limits": {"memory": "1GB"}}}]}})
    assert err.value.code == 400 and err.value.reason == "BadRequest"
    assert err.value.message == ('Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
                                 "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def test_volume_defaults():
    volumes = [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "c"}},
               {"name": "dev", "hostPath": {"path": "/dev"}}]
    pod = defaulted("pods", {"metadata": {"name": "p"},
                             "spec": {"containers": [{"name": "c", "image": "x"}], "volumes": volumes}})
    assert pod["spec"]["volumes"] == [{"name": "scratch", "emptyDir": {}},
                                      {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}},
                                      {"name": "dev", "hostPath": {"path": "/dev", "type": ""}}]


def template(**spec) -> dict:
    return {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "x"}], **spec}}


def test_deployment_defaults():
    dep = defaulted("deployments.apps", {"metadata": {"name": "d"}, "spec": {"template": template()}})
    spec = dep["spec"]
    assert spec["replicas"] == 1 and spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    tspec = spec["template"]["spec"]
    assert tspec["restartPolicy"] == "Always" and tspec["dnsPolicy"] == "ClusterFirst"
    assert "enableServiceLinks" not in tspec  # a pod-only default


def test_daemonset_and_replicaset_defaults():
    ds = defaulted("daemonsets.apps", {"metadata": {"name": "d"}, "spec": {"template": template()}})
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["spec"]["revisionHistoryLimit"] == 10
    assert ds["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    assert defaulted("replicasets.apps", {"metadata": {"name": "r"}, "spec": {"template": template()}})["spec"][
        "replicas"] == 1


def test_daemonset_template_generation_follows_template_changes():
    old = defaulted("daemonsets.apps", {"metadata": {"name": "d"}, "spec": {"template": template()}})
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "y"
    new = strategy_for(REGISTRY.by_key("daemonsets.apps")).prepare_for_update(new, old)
    assert new["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"


def test_job_defaults_and_generated_selector():
    job = defaulted("jobs.batch", {"metadata": {"name": "train"},
                                   "spec": {"template": template(restartPolicy="Never")}})
    spec = job["spec"]
    assert {k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "completionMode", "suspend",
                                 "podReplacementPolicy", "manualSelector")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": False}
    job["metadata"]["uid"] = "abc"
    generate_selector(job)
    generated = {"app": "x", "batch.kubernetes.io/controller-uid": "abc", "batch.kubernetes.io/job-name": "train",
                 "controller-uid": "abc", "job-name": "train"}
    assert job["spec"]["template"]["metadata"]["labels"] == generated
    assert job["metadata"]["labels"] == generated
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "abc"}}


def test_manual_selector_is_left_alone():
    job = defaulted("jobs.batch", {"metadata": {"name": "t", "uid": "abc"},
                                   "spec": {"manualSelector": True, "selector": {"matchLabels": {"app": "x"}},
                                            "template": template(restartPolicy="Never")}})
    strategy_for(REGISTRY.by_key("jobs.batch")).prepare_for_create(job, CONTEXT)
    assert job["spec"]["selector"] == {"matchLabels": {"app": "x"}}
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "x"}


def test_service_defaults():
    svc = defaulted("services", {"metadata": {"name": "s"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}})
    assert svc["spec"] == {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                           "sessionAffinity": "None", "externalTrafficPolicy": "Cluster",
                           "internalTrafficPolicy": "Cluster"}


def test_other_core_defaults():
    secret = defaulted("secrets", {"metadata": {"name": "s"}, "stringData": {"token": "abc"}})
    assert secret == {"metadata": {"name": "s"}, "type": "Opaque", "data": {"token": "YWJj"}}
    ns = defaulted("namespaces", {"metadata": {"name": "lab"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "lab"}
    assert ns["status"] == {"phase": "Active"}
    node = defaulted("nodes", {"metadata": {"name": "n"}, "status": {"capacity": {"memory": "1048576Ki",
                                                                                  "nvidia.com/gpu": "4"}}})
    assert node["status"]["allocatable"] == {"memory": "1Gi", "nvidia.com/gpu": "4"}
    pc = defaulted("priorityclasses.scheduling.k8s.io", {"metadata": {"name": "high"}, "value": 1})
    assert pc["preemptionPolicy"] == "PreemptLowerPriority"
