"""Mutating admission on create: ServiceAccount, Priority and DefaultTolerationSeconds (plugin/pkg/admission)."""
import copy
import re

import pytest

from gpulab.cluster import errors
from gpulab.cluster.kinds import builtin_registry, strategy_for

REGISTRY = builtin_registry()
PODS = REGISTRY.by_key("pods")
PRIORITY_CLASSES = REGISTRY.by_key("priorityclasses.scheduling.k8s.io")


class Store:
    """What admission reads (a strategy's Context): objects by key/name, whole lists, the clock."""

    def __init__(self, *objects):
        self.objects = {(o["key"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}

    def lookup(self, key, name, namespace=""):
        return self.objects.get((key, namespace, name))

    def list(self, key):
        return [o for (k, _, _), o in self.objects.items() if k == key]

    @staticmethod
    def clock():
        return 0.0


DEFAULT_SA = {"key": "serviceaccounts", "metadata": {"name": "default", "namespace": "lab"}}


def admitted(pod_spec: dict, store: Store = Store(DEFAULT_SA), **meta) -> dict:
    pod = {"metadata": {"name": "p", "namespace": "lab", **meta}, "spec": pod_spec, "status": {"phase": "Pending"}}
    strategy_for(PODS).default(pod)
    strategy_for(PODS).admit_create(pod, store)
    return pod


def containers(*names) -> list:
    return [{"name": n, "image": "x"} for n in names]


def test_service_account_token_volume_and_mounts():
    pod = admitted({"containers": containers("a", "b"), "initContainers": containers("init")})
    spec = pod["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    volume = spec["volumes"][-1]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    mount = {"name": volume["name"], "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    for ctr in spec["containers"] + spec["initContainers"]:
        assert ctr["volumeMounts"] == [mount]


def test_automount_opt_out_and_pull_secrets():
    sa = {"key": "serviceaccounts", "metadata": {"name": "builder", "namespace": "lab"},
          "automountServiceAccountToken": False, "imagePullSecrets": [{"name": "regcred"}]}
    pod = admitted({"serviceAccountName": "builder", "containers": containers("a")}, Store(sa))
    assert "volumes" not in pod["spec"] and "volumeMounts" not in pod["spec"]["containers"][0]
    assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]


def test_missing_service_account_is_forbidden():
    with pytest.raises(errors.ApiError) as err:
        admitted({"serviceAccountName": "ghost", "containers": containers("a")})
    assert (err.value.code, err.value.reason) == (403, "Forbidden")
    assert err.value.message == ('pods "p" is forbidden: error looking up service account lab/ghost: '
                                 'serviceaccount "ghost" not found')


def test_priority_from_class_and_default():
    assert {k: admitted({"containers": containers("a")})["spec"][k] for k in ("priority", "preemptionPolicy")} == {
        "priority": 0, "preemptionPolicy": "PreemptLowerPriority"}
    high = {"key": "priorityclasses.scheduling.k8s.io", "metadata": {"name": "gpu-high"}, "value": 100000,
            "preemptionPolicy": "Never"}
    pod = admitted({"priorityClassName": "gpu-high", "containers": containers("a")}, Store(DEFAULT_SA, high))
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (100000, "Never")
    default = {"key": "priorityclasses.scheduling.k8s.io", "metadata": {"name": "batch"}, "value": 10,
               "globalDefault": True, "preemptionPolicy": "PreemptLowerPriority"}
    pod = admitted({"containers": containers("a")}, Store(DEFAULT_SA, default))
    assert (pod["spec"]["priorityClassName"], pod["spec"]["priority"]) == ("batch", 10)


@pytest.mark.parametrize("spec, message", [
    ({"priorityClassName": "nope"}, 'pods "p" is forbidden: no PriorityClass with name nope was found'),
    ({"priority": 5}, 'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; '
                      "priority admission controller computed 0 from the given PriorityClass name"),
])
def test_priority_rejections(spec, message):
    with pytest.raises(errors.ApiError) as err:
        admitted({"containers": containers("a"), **spec})
    assert err.value.message == message


def test_system_priority_classes_resolve():
    pod = admitted({"priorityClassName": "system-node-critical", "containers": containers("a")})
    assert pod["spec"]["priority"] == 2000001000


def test_only_one_global_default_priority_class():
    store = Store({"key": "priorityclasses.scheduling.k8s.io", "metadata": {"name": "batch"}, "value": 10,
                   "globalDefault": True})
    with pytest.raises(errors.ApiError) as err:
        strategy_for(PRIORITY_CLASSES).admit_create({"metadata": {"name": "other"}, "value": 1, "globalDefault": True},
                                                    store)
    assert err.value.message == ('priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass batch is '
                                 "already marked as default. Only one default can exist")


def test_default_toleration_seconds():
    tolerations = admitted({"containers": containers("a")})["spec"]["tolerations"]
    assert tolerations == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}]
    own = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
           "tolerationSeconds": 30}
    pod = admitted({"containers": containers("a"), "tolerations": [copy.deepcopy(own)]})
    assert pod["spec"]["tolerations"] == [own, {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                                "effect": "NoExecute", "tolerationSeconds": 300}]
    everything = {"operator": "Exists"}
    assert admitted({"containers": containers("a"), "tolerations": [everything]})["spec"]["tolerations"] == [everything]
