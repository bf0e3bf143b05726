"""Nodes, namespaces, config maps, secrets, services, events, leases, PDBs and PriorityClasses."""
import copy

import pytest

from gpulab.cluster import errors
from gpulab.cluster.kinds import builtin_registry, strategy_for, validate_create, validate_update

REGISTRY = builtin_registry()


def kubectl_says(err: errors.ApiError) -> str:
    details = err.details
    msgs = list(dict.fromkeys(f"{c['field']}: {c['message']}" for c in details["causes"]))
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    return f'The {details["kind"]} "{details["name"]}" is invalid: {agg}'


def messages(key: str, obj: dict) -> list[str]:
    rt = REGISTRY.by_key(key)
    obj = copy.deepcopy(obj)
    strategy_for(rt).default(obj)
    return [str(e) for e in validate_create(rt, obj)]


def stored(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"].update(uid="u1", resourceVersion="3", creationTimestamp="2026-01-01T00:00:00Z")
    return obj


def node(*taints, capacity=None) -> dict:
    return {"metadata": {"name": "gpu-node-1"}, "spec": {"taints": list(taints)},
            "status": {"capacity": capacity or {"nvidia.com/gpu": "8"}}}


def test_node_taints_as_kubectl_shows_them():
    obj = node({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
               {"key": "nvidia.com/gpu", "value": "other", "effect": "NoSchedule"},
               {"key": "dedicated", "effect": ""}, {"key": "x", "effect": "NoRun"},
               {"key": "bad key", "effect": "NoExecute"})
    assert messages("nodes", obj) == [
        'metadata.taints[1]: Duplicate value: {"Key":"nvidia.com/gpu","Value":"other","Effect":"NoSchedule",'
        '"TimeAdded":null}: taints must be unique by key and effect pair',
        "metadata.taints[2].effect: Required value",
        'metadata.taints[3].effect: Unsupported value: "NoRun": supported values: "NoSchedule", "PreferNoSchedule", '
        '"NoExecute"',
        'metadata.taints[4].key: Invalid value: "bad key": name part must consist of alphanumeric characters, \'-\', '
        "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]


def test_node_capacity_must_be_whole_gpus():
    assert messages("nodes", node(capacity={"nvidia.com/gpu": "1500m"})) == [
        'status.capacity.nvidia.com/gpu: Invalid value: "1500m": must be an integer',
        'status.allocatable.nvidia.com/gpu: Invalid value: "1500m": must be an integer']


def test_node_update_taints_and_provider_id():
    old = stored(node())
    old["spec"]["providerID"] = "kwok://gpu-node-1"
    new = copy.deepcopy(old)
    new["spec"].update(providerID="other", taints=[{"key": "nvidia.com/gpu"}])
    errs = validate_update(REGISTRY.by_key("nodes"), new, old)
    assert kubectl_says(errors.invalid_object("Node", "", "gpu-node-1", errs)) == (
        'The Node "gpu-node-1" is invalid: [metadata.taints[0].effect: Required value, spec.providerID: Forbidden: '
        'node updates may not change providerID except from "" to valid]')


def test_namespace_status_phase():
    old = stored({"metadata": {"name": "lab"}, "status": {"phase": "Active"}})
    new = copy.deepcopy(old)
    new["status"]["phase"] = "Terminating"
    assert [str(e) for e in validate_update(REGISTRY.by_key("namespaces"), new, old, "status")] == [
        "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"]


def test_config_map_size_and_immutability():
    big = {"metadata": {"name": "cm", "namespace": "default"}, "data": {"blob": "x" * (1024 * 1024 + 1)}}
    err = errors.invalid_object("ConfigMap", "", "cm", validate_create(REGISTRY.by_key("configmaps"), big))
    assert err.message == 'ConfigMap "cm" is invalid: : Too long: may not be more than 1048576 bytes'
    old = stored({"metadata": {"name": "cm", "namespace": "default"}, "data": {"a": "1"}, "immutable": True})
    new = copy.deepcopy(old)
    new["data"]["a"] = "2"
    assert [str(e) for e in validate_update(REGISTRY.by_key("configmaps"), new, old)] == [
        "data: Forbidden: field is immutable when `immutable` is set"]


def test_secret_type_rules_and_immutable_type():
    tls = {"metadata": {"name": "tls", "namespace": "default"}, "type": "kubernetes.io/tls",
           "data": {"tls.crt": "eA=="}}
    assert messages("secrets", tls) == ["data[tls.key]: Required value"]
    old = stored({"metadata": {"name": "s", "namespace": "default"}, "type": "Opaque"})
    new = copy.deepcopy(old)
    new["type"] = "kubernetes.io/basic-auth"
    new["data"] = {"username": "YQ=="}
    assert [str(e) for e in validate_update(REGISTRY.by_key("secrets"), new, old)] == [
        'type: Invalid value: "kubernetes.io/basic-auth": field is immutable']


def service(**spec) -> dict:
    return {"metadata": {"name": "web", "namespace": "default"}, "spec": spec}


def test_service_ports():
    obj = service(ports=[{"port": 80}, {"port": 80, "name": "Web"}], type="NodePort")
    assert messages("services", obj) == [
        "spec.ports[0].name: Required value",
        'spec.ports[1].name: Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case alphanumeric '
        "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        'spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,'
        '"NodePort":0}',
    ]
    assert messages("services", service()) == ["spec.ports: Required value"]
    assert messages("services", service(type="Magic", ports=[{"port": 1}])) == [
        'spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", '
        '"NodePort"']


def test_service_cluster_ip_may_not_change():
    old = stored(service(ports=[{"port": 80}], clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"]))
    strategy_for(REGISTRY.by_key("services")).default(old)
    new = copy.deepcopy(old)
    new["spec"]["clusterIPs"] = ["10.96.0.11"]
    # ValidateServiceUpdate: validateUpgradeDowngradeClusterIPs, then ValidateService's related-fields check.
    assert [str(e) for e in validate_update(REGISTRY.by_key("services"), new, old)] == [
        'spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once set',
        'spec.clusterIPs: Invalid value: ["10.96.0.11"]: first value must match `clusterIP`']


def test_event_namespace_must_match():
    event = {"metadata": {"name": "e1", "namespace": "lab"}, "reason": "Scheduled",
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}}
    assert messages("events", event) == [
        'involvedObject.namespace: Invalid value: "default": does not match event.namespace']


def test_lease_pdb_and_priority_class():
    lease = {"metadata": {"name": "gpu-node-1", "namespace": "kube-node-lease"},
             "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}}
    assert messages("leases.coordination.k8s.io", lease) == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
        "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"]
    pdb = {"metadata": {"name": "p", "namespace": "default"},
           "spec": {"minAvailable": "50%", "maxUnavailable": 1, "selector": {"matchLabels": {"app": "x"}}}}
    assert messages("poddisruptionbudgets.policy", pdb) == [
        'spec: Invalid value: {"MinAvailable":"50%","Selector":{"matchLabels":{"app":"x"}},"MaxUnavailable":1,'
        '"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set']
    assert messages("priorityclasses.scheduling.k8s.io", {"metadata": {"name": "huge"}, "value": 2_000_000_000}) == [
        "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
    assert messages("priorityclasses.scheduling.k8s.io",
                    {"metadata": {"name": "system-node-critical"}, "value": 5}) == [
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
        "error: value of system-node-critical PriorityClass must be 2000001000"]


def test_priority_class_value_is_fixed():
    old = stored({"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "PreemptLowerPriority"})
    new = copy.deepcopy(old)
    new["value"] = 2000
    assert [str(e) for e in validate_update(REGISTRY.by_key("priorityclasses.scheduling.k8s.io"), new, old)] == [
        "value: Forbidden: may not be changed in an update."]


@pytest.mark.parametrize("name, message", [
    ("a/b", "metadata.name: Invalid value: \"a/b\": may not contain '/'"),
    ("..", "metadata.name: Invalid value: \"..\": may not be '..'"),
])
def test_generic_path_segment_name_rule(name, message):
    pdb = {"metadata": {"name": name, "namespace": "default"}, "spec": {}}
    assert messages("poddisruptionbudgets.policy", pdb) == [message]
