"""Deployments, ReplicaSets, DaemonSets and Jobs (apps/validation, batch/validation, registry strategies)."""
import copy

import pytest

from gpulab.cluster import errors
from gpulab.cluster.kinds import builtin_registry, strategy_for, validate_create, validate_update
from gpulab.cluster.kinds.jobs import generate_selector

REGISTRY = builtin_registry()


def kubectl_says(err: errors.ApiError) -> str:
    details = err.details
    msgs = list(dict.fromkeys(f"{c['field']}: {c['message']}" for c in details["causes"]))
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    return f'The {details["kind"]} "{details["name"]}" is invalid: {agg}'


def workload(key: str, selector=None, labels=None, **spec) -> dict:
    rt = REGISTRY.by_key(key)
    obj = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {"name": "web", "namespace": "default"},
           "spec": {"template": {"metadata": {"labels": labels if labels is not None else {"app": "web"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}, **spec}}
    if selector is not None:
        obj["spec"]["selector"] = selector
    strategy_for(rt).default(obj)
    return obj


def messages(key: str, obj: dict) -> list[str]:
    return [str(e) for e in validate_create(REGISTRY.by_key(key), obj)]


def stored(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("uid", "u1")
    obj["metadata"].update(resourceVersion="3", creationTimestamp="2026-01-01T00:00:00Z", generation=1)
    return obj


@pytest.mark.parametrize("key", ["deployments.apps", "replicasets.apps", "daemonsets.apps"])
def test_valid_workloads_pass(key):
    assert messages(key, workload(key, {"matchLabels": {"app": "web"}})) == []


def test_selector_must_match_template_labels():
    obj = workload("deployments.apps", {"matchLabels": {"app": "api"}})
    err = errors.invalid_object("Deployment", "apps", "web", validate_create(REGISTRY.by_key("deployments.apps"), obj))
    assert kubectl_says(err) == ('The Deployment "web" is invalid: spec.template.metadata.labels: Invalid value: '
                                 '{"app":"web"}: `selector` does not match template `labels`')


@pytest.mark.parametrize("key, expected", [
    ("deployments.apps", ["spec.selector: Required value"]),
    ("replicasets.apps", ["spec.selector: Required value"]),
    ("daemonsets.apps", ['spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match '
                         "template `labels`"]),
])
def test_missing_selector(key, expected):
    assert messages(key, workload(key)) == expected


def test_empty_selector_and_template_restart_policy():
    obj = workload("deployments.apps", {}, restartPolicy=None)
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert messages("deployments.apps", obj) == [
        "spec.selector: Invalid value: {}: empty selector is invalid for deployment",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]


def test_rolling_update_parameters():
    obj = workload("deployments.apps", {"matchLabels": {"app": "web"}},
                   strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}})
    assert messages("deployments.apps", obj) == [
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"]
    obj = workload("daemonsets.apps", {"matchLabels": {"app": "web"}},
                   updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%", "maxSurge": 1}})
    assert messages("daemonsets.apps", obj) == [
        'spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%',
        "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero",
    ]


def test_unknown_strategy_type():
    obj = workload("deployments.apps", {"matchLabels": {"app": "web"}}, strategy={"type": "BlueGreen"})
    assert messages("deployments.apps", obj) == [
        'spec.strategy: Unsupported value: {"Type":"BlueGreen","RollingUpdate":null}: supported values: '
        '"Recreate", "RollingUpdate"']


@pytest.mark.parametrize("key, kind", [("deployments.apps", "Deployment"), ("replicasets.apps", "ReplicaSet"),
                                       ("daemonsets.apps", "DaemonSet")])
def test_selector_is_immutable(key, kind):
    old = stored(workload(key, {"matchLabels": {"app": "web"}}))
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    err = errors.invalid_object(kind, "apps", "web", validate_update(REGISTRY.by_key(key), new, old))
    assert kubectl_says(err) == (f'The {kind} "web" is invalid: spec.selector: Invalid value: '
                                 '{"matchLabels":{"app":"web","tier":"x"}}: field is immutable')


def test_deployment_status_counts():
    old = stored(workload("deployments.apps", {"matchLabels": {"app": "web"}}))
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "readyReplicas": 2, "availableReplicas": -1}
    assert [str(e) for e in validate_update(REGISTRY.by_key("deployments.apps"), new, old, "status")] == [
        "status.availableReplicas: Invalid value: -1: must be greater than or equal to 0",
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
    ]


def job(**spec) -> dict:
    obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "default"},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "c", "image": "pytorch"}]}}, **spec}}
    strategy_for(REGISTRY.by_key("jobs.batch")).default(obj)
    return obj


def created_job(**spec) -> dict:
    obj = job(**spec)
    obj["metadata"]["uid"] = "0b6f1c1e-0000-4000-8000-000000000001"
    generate_selector(obj)
    return obj


def test_job_needs_on_failure_or_never():
    obj = job()
    obj["spec"]["template"]["spec"].pop("restartPolicy")
    strategy_for(REGISTRY.by_key("jobs.batch")).default(obj)
    obj["metadata"]["uid"] = "0b6f1c1e-0000-4000-8000-000000000001"
    generate_selector(obj)
    err = errors.invalid_object("Job", "batch", "train", validate_create(REGISTRY.by_key("jobs.batch"), obj))
    assert kubectl_says(err) == ('The Job "train" is invalid: spec.template.spec.restartPolicy: Required value: '
                                 'valid values: "OnFailure", "Never"')


def test_job_is_valid_with_its_generated_selector():
    assert messages("jobs.batch", created_job()) == []


def test_job_generated_labels_must_not_be_overridden():
    obj = job()
    obj["spec"]["template"]["metadata"] = {"labels": {"job-name": "other"}}
    obj["metadata"]["uid"] = "u-1"
    generate_selector(obj)
    assert messages("jobs.batch", obj) == [
        'spec.template.metadata.labels[job-name]: Invalid value: {"batch.kubernetes.io/controller-uid":"u-1",'
        '"batch.kubernetes.io/job-name":"train","controller-uid":"u-1","job-name":"other"}: must be \'train\'']


def test_job_template_is_immutable_unless_suspended():
    old = stored(created_job())
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "pytorch:2"
    errs = [str(e) for e in validate_update(REGISTRY.by_key("jobs.batch"), new, old)]
    assert len(errs) == 1 and errs[0].startswith("spec.template: Invalid value: {") and errs[0].endswith(
        ": field is immutable")
    suspended = stored(created_job(suspend=True))
    new = copy.deepcopy(suspended)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
    assert validate_update(REGISTRY.by_key("jobs.batch"), new, suspended) == []


def test_job_completions_and_selector_immutable():
    old = stored(created_job())
    new = copy.deepcopy(old)
    new["spec"]["completions"] = 3
    assert [str(e) for e in validate_update(REGISTRY.by_key("jobs.batch"), new, old)] == [
        "spec.completions: Invalid value: 3: field is immutable"]


def test_negative_job_counts():
    assert messages("jobs.batch", created_job(backoffLimit=-1, parallelism=-2)) == [
        "spec.parallelism: Invalid value: -2: must be greater than or equal to 0",
        "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
    ]
