"""The embedded API server driven by the official kubernetes Python client over HTTPS."""
from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException


@pytest.fixture(scope="module")
def core(cluster):
    return client.CoreV1Api(cluster.client())


@pytest.fixture(scope="module")
def apps(cluster):
    return client.AppsV1Api(cluster.client())


def test_version(cluster):
    info = client.VersionApi(cluster.client()).get_code()
    assert info.major == "1" and info.minor == "37" and info.git_version.startswith("v1.37.")


def test_crud_configmap(core):
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="crud", labels={"a": "b"}), data={"k": "v"})
    created = core.create_namespaced_config_map("default", body)
    assert created.metadata.uid and created.metadata.resource_version
    got = core.read_namespaced_config_map("crud", "default")
    assert got.data == {"k": "v"}
    got.data["k"] = "w"
    replaced = core.replace_namespaced_config_map("crud", "default", got)
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    patched = core.patch_namespaced_config_map("crud", "default", {"data": {"x": "y"}})
    assert patched.data == {"k": "w", "x": "y"}
    assert [c.metadata.name for c in core.list_namespaced_config_map("default", label_selector="a=b").items] == \
        ["crud"]
    core.delete_namespaced_config_map("crud", "default")
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("crud", "default")
    assert err.value.status == 404


def test_pagination(core):
    for i in range(7):
        core.create_namespaced_config_map("default", client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=f"page-{i}", labels={"paged": "yes"})))
    seen, token = [], None
    while True:
        page = core.list_namespaced_config_map("default", label_selector="paged=yes", limit=3, _continue=token)
        seen += [c.metadata.name for c in page.items]
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 7 - len(seen)
    assert seen == [f"page-{i}" for i in range(7)]


def test_field_selector(core):
    names = [n.metadata.name for n in core.list_node(field_selector="metadata.name=gpulab-worker2").items]
    assert names == ["gpulab-worker2"]
    with pytest.raises(ApiException) as err:
        core.list_node(field_selector="spec.gpus=8")
    assert err.value.status == 400 and "field label not supported: spec.gpus" in err.value.body


def test_watch_stream(core):
    events: list[tuple[str, str]] = []
    w = watch.Watch()

    def consume():
        for ev in w.stream(core.list_namespaced_config_map, "default", label_selector="watched=yes",
                           timeout_seconds=10):
            events.append((ev["type"], ev["object"].metadata.name))
            if ev["type"] == "DELETED":
                w.stop()

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.5)
    core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="wc", labels={"watched": "yes"})))
    core.patch_namespaced_config_map("wc", "default", {"data": {"a": "1"}})
    core.delete_namespaced_config_map("wc", "default")
    t.join(timeout=15)
    assert events == [("ADDED", "wc"), ("MODIFIED", "wc"), ("DELETED", "wc")]


def test_server_side_apply_create_is_one_added_event(cluster, core):
    """A server-side apply that creates stores once: one ADDED event carrying the object's only resourceVersion.

    Upstream the apply patcher finds no live object and the create handler stores the apply's result
    (apiserver/pkg/endpoints/handlers/patch.go applyPatcher, rest.go patchResource: "create if not exists").
    """
    events: list[tuple[str, str, str]] = []
    w = watch.Watch()

    def consume():
        for ev in w.stream(core.list_namespaced_config_map, "default", label_selector="ssa-create=yes",
                           timeout_seconds=20):
            meta = ev["object"].metadata
            events.append((ev["type"], meta.name, meta.resource_version))
            if meta.name == "ssa-sentinel":
                w.stop()

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.5)
    labels = {"ssa-create": "yes"}
    cluster.kubectl("apply", "--server-side", "-f", "-", input=(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa-by-kubectl\n  labels: {ssa-create: 'yes'}\n"
        "data: {a: '1'}\n"))
    by_client = core.patch_namespaced_config_map(
        "ssa-by-client", "default", {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "ssa-by-client", "labels": labels}, "data": {"b": "2"}},
        field_manager="gpulab-test", _content_type="application/apply-patch+yaml")
    # Events arrive in order: a second write of either object would come before the sentinel's ADDED.
    core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="ssa-sentinel", labels=labels)))
    t.join(timeout=25)
    by_kubectl = core.read_namespaced_config_map("ssa-by-kubectl", "default")
    assert events[:2] == [("ADDED", "ssa-by-kubectl", by_kubectl.metadata.resource_version),
                          ("ADDED", "ssa-by-client", by_client.metadata.resource_version)]
    assert [e[:2] for e in events[2:]] == [("ADDED", "ssa-sentinel")]
    assert [(m.manager, m.operation) for m in by_client.metadata.managed_fields] == [("gpulab-test", "Apply")]


def test_put_creates_only_kinds_that_allow_create_on_update(core):
    """svcStrategy.AllowCreateOnUpdate is true (201 Created); configMapStrategy's is false (404)."""
    svc = client.V1Service(metadata=client.V1ObjectMeta(name="put-created"),
                           spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)]))
    created, status, _ = core.replace_namespaced_service_with_http_info("put-created", "default", svc)
    assert status == 201 and created.spec.cluster_ip
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("put-missing", "default",
                                           client.V1ConfigMap(metadata=client.V1ObjectMeta(name="put-missing")))
    assert err.value.status == 404
    assert '"message":"configmaps \\"put-missing\\" not found"' in err.value.body


def test_created_workloads_carry_their_zero_status_counters(cluster, apps):
    """The Go types' non-omitempty status counters are written as 0 (apps/v1 and policy/v1 types.go), so the
    client's models, which require them, read a created DaemonSet, ReplicaSet and PDB without ValueError."""
    template = client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"app": "zero"}),
                                        spec=client.V1PodSpec(containers=[client.V1Container(name="c",
                                                                                             image="busybox")]))
    selector = client.V1LabelSelector(match_labels={"app": "zero"})
    ds = apps.create_namespaced_daemon_set("default", client.V1DaemonSet(
        metadata=client.V1ObjectMeta(name="zero"), spec=client.V1DaemonSetSpec(selector=selector, template=template)))
    assert (ds.status.current_number_scheduled, ds.status.number_misscheduled, ds.status.desired_number_scheduled,
            ds.status.number_ready) == (0, 0, 0, 0)
    rs = apps.create_namespaced_replica_set("default", client.V1ReplicaSet(
        metadata=client.V1ObjectMeta(name="zero"),
        spec=client.V1ReplicaSetSpec(replicas=0, selector=selector, template=template)))
    assert rs.status.replicas == 0
    pdb = client.PolicyV1Api(cluster.client()).create_namespaced_pod_disruption_budget("default", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "zero"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "zero"}}}})
    assert (pdb.status.disruptions_allowed, pdb.status.current_healthy, pdb.status.desired_healthy,
            pdb.status.expected_pods) == (0, 0, 0, 0)


def test_watch_resume_from_resource_version(core):
    cm = core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="rv1")))
    core.patch_namespaced_config_map("rv1", "default", {"data": {"n": "1"}})
    w = watch.Watch()
    seen = []
    for ev in w.stream(core.list_namespaced_config_map, "default", resource_version=cm.metadata.resource_version,
                       field_selector="metadata.name=rv1", timeout_seconds=2):
        seen.append(ev["type"])
        w.stop()
    assert seen == ["MODIFIED"]


def test_delete_with_propagation_removes_dependents(core, apps):
    owner = core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="owner")))
    ref = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="dependent", owner_references=[ref])))
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Background")
    for _ in range(50):
        try:
            core.read_namespaced_config_map("dependent", "default")
        except ApiException as exc:
            assert exc.status == 404
            break
        time.sleep(0.1)
    else:
        pytest.fail("dependent was not garbage collected")


def test_finalizers_hold_deletion(core):
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="held", finalizers=["example.com/hold"])))
    core.delete_namespaced_config_map("held", "default")
    held = core.read_namespaced_config_map("held", "default")
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("held", "default")
    assert err.value.status == 404


def test_namespace_deletion_empties_it(core):
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="doomed-ns")))
    for _ in range(50):
        if core.list_namespaced_service_account("doomed-ns").items:
            break
        time.sleep(0.1)
    core.create_namespaced_config_map("doomed-ns", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x")))
    core.delete_namespace("doomed-ns")
    assert core.read_namespace("doomed-ns").status.phase == "Terminating"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("doomed-ns", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="y")))
    assert err.value.status == 403
    for _ in range(100):
        try:
            core.read_namespace("doomed-ns")
        except ApiException as exc:
            assert exc.status == 404
            return
        time.sleep(0.1)
    pytest.fail("namespace was not removed")
