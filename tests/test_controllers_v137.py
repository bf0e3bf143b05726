"""The controllers and admission plugins of the v1.37 kinds, driven through kubectl and the official client:
StatefulSets with claim templates, ReplicationControllers, Endpoints and EndpointSlices, CronJobs' manual runs,
claims provisioned by kind's local-path provisioner, ResourceQuota, LimitRange and RuntimeClass admission."""
from __future__ import annotations

import json
import re

from .conftest import wait_for

STATEFULSET = """
apiVersion: v1
kind: Service
metadata: {name: db, labels: {app: db}}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{name: pg, port: 5432, targetPort: pg}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: pg
        image: nginx:1.27
        ports: [{containerPort: 5432, name: pg}]
        volumeMounts: [{name: data, mountPath: /var/lib/data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"""


def _rows(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def _json(kubectl, *args) -> dict:
    return json.loads(kubectl(*args, "-o", "json").stdout)


def _events(kubectl, kind: str, name: str, namespace: str = "default") -> list[tuple[str, str]]:
    items = _json(kubectl, "get", "events", "-n", namespace,
                  f"--field-selector=involvedObject.kind={kind},involvedObject.name={name}")["items"]
    return [(e["reason"], e["message"]) for e in items]


def test_statefulset_pods_claims_rollout_and_scale(cluster, kubectl):
    kubectl("apply", "-f", "-", input=STATEFULSET)
    out = kubectl("rollout", "status", "statefulset/db", "--timeout=120s", timeout=150).stdout
    assert out.splitlines()[-1] == "partitioned roll out complete: 3 new pods have been updated..."
    assert _rows(kubectl("get", "sts", "db").stdout)[1][:2] == ["db", "3/3"]
    pods = {p["metadata"]["name"]: p for p in _json(kubectl, "get", "pods", "-l", "app=db")["items"]}
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    first = pods["db-0"]
    assert first["spec"]["hostname"] == "db-0" and first["spec"]["subdomain"] == "db"
    labels = first["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "db-0" and labels["apps.kubernetes.io/pod-index"] == "0"
    assert labels["controller-revision-hash"].startswith("db-")
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}} in first["spec"]["volumes"]
    claims = _rows(kubectl("get", "pvc").stdout)
    bound = {r[0]: r for r in claims[1:]}
    for i in range(3):
        row = bound[f"data-db-{i}"]
        assert row[1] == "Bound" and row[3:6] == ["1Gi", "RWO", "standard"]
    volume = _json(kubectl, "get", "pv", bound["data-db-0"][2])
    assert volume["spec"]["hostPath"]["path"].startswith("/var/local-path-provisioner/pvc-")
    assert volume["spec"]["claimRef"]["name"] == "data-db-0"
    node = first["spec"]["nodeName"]
    assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == \
        [node]
    reasons = [r for r, _ in _events(kubectl, "StatefulSet", "db")]
    assert ("SuccessfulCreate", "Create Claim data-db-0 Pod db-0 in StatefulSet db success") in \
        _events(kubectl, "StatefulSet", "db")
    assert ("SuccessfulCreate", "Create Pod db-0 in StatefulSet db successful") in _events(kubectl, "StatefulSet",
                                                                                           "db")
    assert reasons.count("SuccessfulCreate") == 6
    # the claim binds while the kubelet's mount wait is still running: no FailedMount warning
    assert "FailedMount" not in [r for r, _ in _events(kubectl, "Pod", "db-0")]
    claim_events = [r for r, _ in _events(kubectl, "PersistentVolumeClaim", "data-db-0")]
    assert {"WaitForFirstConsumer", "ExternalProvisioning", "Provisioning", "ProvisioningSucceeded"} <= \
        set(claim_events)
    # the headless service lists the pods by their named port
    endpoints = _json(kubectl, "get", "endpoints", "db")
    addresses = endpoints["subsets"][0]["addresses"]
    assert sorted(a["hostname"] for a in addresses) == ["db-0", "db-1", "db-2"]
    assert endpoints["subsets"][0]["ports"] == [{"name": "pg", "port": 5432, "protocol": "TCP"}]
    slices = _json(kubectl, "get", "endpointslices", "-l", "kubernetes.io/service-name=db")["items"]
    assert len(slices) == 1 and slices[0]["metadata"]["name"].startswith("db-")
    assert len(slices[0]["endpoints"]) == 3 and all(e["conditions"]["ready"] for e in slices[0]["endpoints"])

    # a rolling update replaces the pods from the highest ordinal down, recorded as a new revision
    kubectl("set", "image", "statefulset/db", "pg=nginx:1.28")
    kubectl("rollout", "status", "statefulset/db", "--timeout=150s", timeout=180)
    history = kubectl("rollout", "history", "statefulset/db").stdout
    assert re.search(r"^1\s+<none>$", history, re.M) and re.search(r"^2\s+<none>$", history, re.M)
    images = {p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
              for p in _json(kubectl, "get", "pods", "-l", "app=db")["items"]}
    assert images == {"db-0": "nginx:1.28", "db-1": "nginx:1.28", "db-2": "nginx:1.28"}
    status = _json(kubectl, "get", "sts", "db")["status"]
    assert status["currentRevision"] == status["updateRevision"] and status["updatedReplicas"] == 3

    # scaling down removes the highest ordinals; their claims stay (whenScaled: Retain)
    kubectl("scale", "statefulset/db", "--replicas=1")
    wait_for(lambda: [p["metadata"]["name"] for p in _json(kubectl, "get", "pods", "-l", "app=db")["items"]
                      if not p["metadata"].get("deletionTimestamp")] == ["db-0"], timeout=60, what="scale to 1")
    assert {r[0] for r in _rows(kubectl("get", "pvc").stdout)[1:]} >= {"data-db-0", "data-db-1", "data-db-2"}


def test_claim_in_use_is_protected_and_a_missing_class_leaves_it_pending(kubectl):
    kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: scratch}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 2Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"], volumeMounts: [{name: d, mountPath: /d}]}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: scratch}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fast}
spec:
  storageClassName: fast
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
""")
    claim = _json(kubectl, "get", "pvc", "scratch")
    assert claim["spec"]["storageClassName"] == "standard"  # DefaultStorageClass
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    kubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/writer", "--timeout=90s", timeout=120)
    assert _rows(kubectl("get", "pvc", "scratch").stdout)[1][1] == "Bound"
    kubectl("delete", "pvc", "scratch", "--wait=false")
    assert _rows(kubectl("get", "pvc", "scratch").stdout)[1][1] == "Terminating"
    kubectl("delete", "pod", "writer", "--grace-period=0", "--force")
    wait_for(lambda: kubectl("get", "pvc", "scratch", check=False).returncode == 1, timeout=60, what="pvc gone")
    # reclaim policy Delete: the provisioned volume goes with its claim
    wait_for(lambda: all("default/scratch" not in line for line in kubectl("get", "pv").stdout.splitlines()),
             timeout=60, what="pv gone")

    wait_for(lambda: _events(kubectl, "PersistentVolumeClaim", "fast"), what="an event on the claim")
    assert _events(kubectl, "PersistentVolumeClaim", "fast")[0] == \
        ("ProvisioningFailed", 'storageclass.storage.k8s.io "fast" not found')
    assert _rows(kubectl("get", "pvc", "fast").stdout)[1][1] == "Pending"
    assert kubectl("get", "--raw", "/readyz").stdout == "ok"


LOCAL_VOLUMES = """
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-w3}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  hostPath: {path: /data/w3}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [gpulab-worker3]}]}]
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-retired}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: retired
  hostPath: {path: /data/retired}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [retired-node]}]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: w3}
spec: {storageClassName: manual, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: retired}
spec: {storageClassName: retired, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: uses-w3}
spec:
  replicas: 4
  selector: {matchLabels: {app: uses-w3}}
  template:
    metadata: {labels: {app: uses-w3}}
    spec:
      containers: [{name: c, image: busybox, command: [sleep, "3600"], volumeMounts: [{name: d, mountPath: /d}]}]
      volumes: [{name: d, persistentVolumeClaim: {claimName: w3}}]
---
apiVersion: v1
kind: Pod
metadata: {name: uses-retired}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"], volumeMounts: [{name: d, mountPath: /d}]}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: retired}}]
"""


def test_pods_follow_their_bound_volumes_node_affinity(kubectl):
    """VolumeBinding's Filter (volume_binding.go, binder.go FindPodVolumes): a pod goes where its bound volume is,
    and stays Pending with upstream's reason when that node is gone."""
    kubectl("apply", "-f", "-", input=LOCAL_VOLUMES)
    kubectl("rollout", "status", "deployment/uses-w3", "--timeout=60s", timeout=90)
    nodes = {p["spec"]["nodeName"] for p in _json(kubectl, "get", "pods", "-l", "app=uses-w3")["items"]}
    assert nodes == {"gpulab-worker3"}
    wait_for(lambda: [m for r, m in _events(kubectl, "Pod", "uses-retired") if r == "FailedScheduling"],
             timeout=30, what="FailedScheduling")
    message = [m for r, m in _events(kubectl, "Pod", "uses-retired") if r == "FailedScheduling"][0]
    assert "3 node(s) had volume node affinity conflict" in message
    assert _json(kubectl, "get", "pod", "uses-retired")["status"]["phase"] == "Pending"
    kubectl("delete", "-f", "-", "--wait=false", input=LOCAL_VOLUMES)


def test_gpu_quota_is_charged_and_enforced(cluster, kubectl):
    kubectl("create", "namespace", "team-a")
    kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: team-a}
spec:
  hard: {requests.nvidia.com/gpu: "2", requests.cpu: "2", count/configmaps: "20"}
""")
    wait_for(lambda: _json(kubectl, "get", "quota", "gpus", "-n", "team-a").get("status", {}).get("used"),
             what="quota status")
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: team-a}
spec:
  containers:
  - name: train
    image: busybox
    resources: {requests: {cpu: 500m}, limits: {nvidia.com/gpu: %d}}
"""
    kubectl("apply", "-f", "-", input=pod % ("one", 1))
    refused = kubectl("apply", "-f", "-", input=pod % ("two", 2), check=False)
    assert refused.returncode == 1
    assert ('pods "two" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=2, used: '
            'requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=2') in refused.stderr
    missing = kubectl("run", "no-cpu", "-n", "team-a", "--image=busybox", check=False)
    assert 'pods "no-cpu" is forbidden: failed quota: gpus: must specify requests.cpu for: no-cpu' in missing.stderr
    rows = _rows(kubectl("get", "quota", "gpus", "-n", "team-a").stdout)
    assert rows[0] == ["NAME", "REQUEST", "LIMIT", "AGE"]
    assert rows[1][1] == "count/configmaps: 1/20, requests.cpu: 500m/2, requests.nvidia.com/gpu: 1/2"
    # the controller gives the GPU back when its pod goes
    kubectl("delete", "pod", "one", "-n", "team-a", "--grace-period=0", "--force")
    wait_for(lambda: _json(kubectl, "get", "quota", "gpus", "-n", "team-a")["status"]["used"]
             .get("requests.nvidia.com/gpu") == "0", what="gpu quota released")
    kubectl("apply", "-f", "-", input=pod % ("two", 2))


def test_limit_range_defaults_and_limits_and_runtime_class_admission(kubectl):
    kubectl("create", "namespace", "limited")
    kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: LimitRange
metadata: {name: container-limits, namespace: limited}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 256Mi}
    defaultRequest: {cpu: 100m}
    max: {cpu: "1"}
""")
    kubectl("run", "defaulted", "-n", "limited", "--image=busybox")
    pod = _json(kubectl, "get", "pod", "defaulted", "-n", "limited")
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m", "memory": "256Mi"},
                                                         "requests": {"cpu": "100m", "memory": "256Mi"}}
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == \
        "LimitRanger plugin set: cpu, memory request for container defaulted; cpu, memory limit for container defaulted"
    big = kubectl("run", "big", "-n", "limited", "--image=busybox", "--overrides",
                  '{"spec":{"containers":[{"name":"big","image":"busybox","resources":{"limits":{"cpu":"2"}}}]}}',
                  check=False)
    assert 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2' in big.stderr
    missing = kubectl("run", "gpu", "--image=busybox", "--overrides", '{"spec":{"runtimeClassName":"nvidia-x"}}',
                      check=False)
    assert 'pods "gpu" is forbidden: pod rejected: RuntimeClass "nvidia-x" not found' in missing.stderr
    kubectl("apply", "-f", "-", input="""
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia-x}
handler: nvidia
overhead: {podFixed: {cpu: 50m}}
scheduling: {nodeSelector: {gpulab.dev/runtime: nvidia}}
""")
    kubectl("run", "gpu", "--image=busybox", "--overrides", '{"spec":{"runtimeClassName":"nvidia-x"}}')
    pod = _json(kubectl, "get", "pod", "gpu")
    assert pod["spec"]["overhead"] == {"cpu": "50m"}
    assert pod["spec"]["nodeSelector"] == {"gpulab.dev/runtime": "nvidia"}


def test_replication_controller_and_cronjob_manual_run(cluster, kubectl):
    from kubernetes import client

    core = client.CoreV1Api(cluster.client())
    body = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
            "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "legacy"}},
                                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    created = core.create_namespaced_replication_controller("default", body)
    assert created.spec.selector == {"app": "legacy"}  # defaulted from the template's labels
    wait_for(lambda: (core.read_namespaced_replication_controller("legacy", "default").status.ready_replicas or 0)
             == 2, timeout=90, what="two ready replicas")
    row = _rows(kubectl("get", "rc", "legacy", "-o", "wide").stdout)
    assert row[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert row[1][:4] == ["legacy", "2", "2", "2"] and row[1][-1] == "app=legacy"
    kubectl("scale", "rc", "legacy", "--replicas=1")
    wait_for(lambda: len([p for p in core.list_namespaced_pod("default", label_selector="app=legacy").items
                          if not p.metadata.deletion_timestamp]) == 1, timeout=60, what="scale down")

    # the manual Job runs long enough to be seen active (one that finished first would never be listed)
    kubectl("create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *", "--", "sleep", "600")
    row = _rows(kubectl("get", "cronjob", "nightly").stdout)
    assert row[0] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
    assert row[1][:6] == ["nightly", "0 3 * * *", "<none>", "False", "0", "<none>"]
    kubectl("create", "job", "nightly-manual", "--from=cronjob/nightly")
    job = _json(kubectl, "get", "job", "nightly-manual")
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    wait_for(lambda: _rows(kubectl("get", "cronjob", "nightly").stdout)[1][4] in ("1", "0") and
             _json(kubectl, "get", "cronjob", "nightly").get("status", {}).get("active"), what="job adopted")
    assert ("UnexpectedJob", "Saw a job that the controller did not create or forgot: nightly-manual") in \
        _events(kubectl, "CronJob", "nightly")
