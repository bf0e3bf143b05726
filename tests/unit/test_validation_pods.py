"""Pod validation: containers, GPU resources, tolerations, affinity, volumes, updates (core/validation)."""
import copy

import pytest

from gpulab.cluster import errors
from gpulab.cluster.kinds import builtin_registry, strategy_for, validate_create, validate_update

REGISTRY = builtin_registry()
PODS = REGISTRY.by_key("pods")


def kubectl_says(err: errors.ApiError) -> str:
    details = err.details
    msgs = list(dict.fromkeys(f"{c['field']}: {c['message']}" for c in details["causes"]))
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    return f'The {details["kind"]} "{details["name"]}" is invalid: {agg}'


def pod(containers=None, **spec) -> dict:
    """A pod as the API server validates it: defaulted, as after admission."""
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-pod", "namespace": "default"},
           "spec": {"containers": containers if containers is not None else [{"name": "cuda", "image": "cuda:12"}],
                    **spec},
           "status": {"phase": "Pending"}}
    strategy_for(PODS).default(obj)
    return obj


def messages(obj: dict) -> list[str]:
    return [str(e) for e in validate_create(PODS, obj)]


def gpu(limits=None, requests=None) -> dict:
    resources = {}
    if limits is not None:
        resources["limits"] = limits
    if requests is not None:
        resources["requests"] = requests
    return pod([{"name": "cuda", "image": "cuda:12", "resources": resources}])


def test_valid_pod_passes():
    assert messages(gpu(limits={"nvidia.com/gpu": 1, "cpu": "500m", "memory": "1Gi"})) == []


def test_half_a_gpu_is_rejected_as_kubectl_shows_it():
    err = errors.invalid_object("Pod", "", "gpu-pod", validate_create(PODS, gpu(limits={"nvidia.com/gpu": 0.5})))
    assert kubectl_says(err) == (
        'The Pod "gpu-pod" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": '
        'must be an integer, spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": must be '
        "an integer]")
    assert err.code == 422 and err.reason == "Invalid"


@pytest.mark.parametrize("limits, requests, expected", [
    ({"nvidia.com/gpu": 2}, {"nvidia.com/gpu": 1},
     ['spec.containers[0].resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2']),
    (None, {"nvidia.com/gpu": 1},
     ["spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"]),
    ({"cpu": "1"}, {"cpu": "2"},
     ['spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1']),
    ({"memory": "-1Gi"}, None,
     ['spec.containers[0].resources.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0',
      'spec.containers[0].resources.requests[memory]: Invalid value: "-1Gi": must be greater than or equal to 0']),
    ({"gpu": 1}, None,
     ['spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource type or fully '
      "qualified",
      'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource for containers',
      'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully '
      "qualified",
      'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for containers']),
])
def test_resource_requirements(limits, requests, expected):
    assert messages(gpu(limits, requests)) == expected


def test_containers_are_required_and_named():
    assert messages(pod([])) == ["spec.containers: Required value"]
    obj = pod([{"name": "a", "image": "x"}, {"name": "a", "image": ""}, {"name": "Bad", "image": "x"}])
    assert messages(obj) == [
        'spec.containers[1].image: Required value',
        'spec.containers[1].name: Duplicate value: "a"',
        'spec.containers[2].name: Invalid value: "Bad": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
        "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ]


def test_ports_and_env():
    obj = pod([{"name": "c", "image": "x", "ports": [{"containerPort": 70000}, {"containerPort": 80, "name": "web",
                                                                           "protocol": "HTTP"}],
                "env": [{"name": ""}, {"name": "A=B"}]}])
    assert messages(obj) == [
        "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        'spec.containers[0].ports[1].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
        "spec.containers[0].env[0].name: Required value",
        'spec.containers[0].env[1].name: Invalid value: "A=B": a valid environment variable name must consist only '
        "of printable ASCII characters other than '='",
    ]


def test_restart_and_dns_policy():
    assert messages(pod(restartPolicy="Sometimes", dnsPolicy="Google")) == [
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
        'spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", "ClusterFirst", '
        '"Default", "None"',
    ]


@pytest.mark.parametrize("toleration, expected", [
    ({"operator": "Equal", "value": "x"},
     'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means '
     '"match all values and all keys"'),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "value": "present"},
     'spec.tolerations[0].operator: Invalid value: "present": value must be empty when `operator` is \'Exists\''),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60},
     "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` "
     "is set"),
    ({"key": "nvidia.com/gpu", "operator": "In"},
     'spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"'),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoRun"},
     'spec.tolerations[0].effect: Unsupported value: "NoRun": supported values: "NoSchedule", "PreferNoSchedule", '
     '"NoExecute"'),
])
def test_tolerations(toleration, expected):
    assert messages(pod(tolerations=[toleration])) == [expected]


def test_node_selector_and_affinity():
    affinity = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "Near", "values": ["A100"]},
                                  {"key": "gpu", "operator": "In"}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}}
    assert messages(pod(nodeSelector={"gpu": "yes please"}, affinity=affinity)) == [
        'spec.nodeSelector: Invalid value: "yes please": a valid label must be an empty string or consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
        "[A-Za-z0-9])?')",
        'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]'
        '.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator',
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must "
        "be in the range 1-100",
    ]


def test_volumes_and_mounts():
    obj = pod([{"name": "c", "image": "x", "volumeMounts": [{"name": "missing", "mountPath": "/data"}]}],
              volumes=[{"name": "cfg", "configMap": {"name": "c"}, "secret": {"secretName": "s"}},
                       {"name": "cfg2", "hostPath": {"path": "/dev"}}, {"name": "cfg2", "emptyDir": {}}])
    assert messages(obj) == [
        "spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type",
        'spec.volumes[2].name: Duplicate value: "cfg2"',
        'spec.containers[0].volumeMounts[0].name: Not found: "missing"',
    ]


def test_image_whitespace_and_ephemeral_containers_on_create():
    obj = pod([{"name": "c", "image": " x"}], ephemeralContainers=[{"name": "dbg", "image": "busybox"}])
    assert messages(obj)[-2:] == [
        'spec.containers[0].image: Invalid value: " x": must not have leading or trailing whitespace',
        "spec.ephemeralContainers: Forbidden: cannot be set on create",
    ]


def stored(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"].update(uid="u1", resourceVersion="7", creationTimestamp="2026-01-01T00:00:00Z")
    return obj


def test_pod_update_may_change_image_and_add_tolerations():
    old = stored(pod(tolerations=[{"key": "a", "operator": "Exists"}]))
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "cuda:13"
    new["spec"]["tolerations"].append({"key": "b", "operator": "Exists"})
    assert validate_update(PODS, new, old) == []


def test_pod_update_of_other_fields_is_forbidden():
    old = stored(pod())
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    message = str(validate_update(PODS, new, old)[0])
    assert message.startswith(
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
        "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
        "  core.PodSpec{\n")
    assert "Containers" in message


def test_pod_update_rules_for_containers_and_tolerations():
    old = stored(pod(tolerations=[{"key": "a", "operator": "Exists"}]))
    new = copy.deepcopy(old)
    new["spec"]["containers"].append({"name": "extra", "image": "x", "imagePullPolicy": "Always",
                                      "terminationMessagePolicy": "File"})
    assert [str(e) for e in validate_update(PODS, new, old)] == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"]
    new = copy.deepcopy(old)
    new["spec"]["tolerations"] = [{"key": "a", "operator": "Exists", "effect": "NoSchedule"}]
    assert "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds" in [
        str(e) for e in validate_update(PODS, new, old)]


def test_pod_status_update_keeps_node_and_qos():
    old = stored(pod())
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "node-1"
    new["status"]["qosClass"] = "Guaranteed"
    assert [str(e) for e in validate_update(PODS, new, old, "status")] == [
        "status.nodeName: Forbidden: may not be changed directly",
        'status.qosClass: Invalid value: "Guaranteed": field is immutable',
    ]
