"""The kinds a v1.37 kube-apiserver serves, as kubectl and the official client see them (issue 12 item 2):
discovery and OpenAPI, printers, deprecation warnings, the `all` category, --prune, and a few of each kind's
validation errors with upstream's words."""
from __future__ import annotations

import json
import re

import pytest

# `kubectl api-resources` of a v1.37 kind cluster.
API_RESOURCES = """
bindings  v1 true Binding
componentstatuses cs v1 false ComponentStatus
configmaps cm v1 true ConfigMap
endpoints ep v1 true Endpoints
events ev v1 true Event
limitranges limits v1 true LimitRange
namespaces ns v1 false Namespace
nodes no v1 false Node
persistentvolumeclaims pvc v1 true PersistentVolumeClaim
persistentvolumes pv v1 false PersistentVolume
pods po v1 true Pod
podtemplates  v1 true PodTemplate
replicationcontrollers rc v1 true ReplicationController
resourcequotas quota v1 true ResourceQuota
secrets  v1 true Secret
serviceaccounts sa v1 true ServiceAccount
services svc v1 true Service
mutatingadmissionpolicies  admissionregistration.k8s.io/v1 false MutatingAdmissionPolicy
mutatingadmissionpolicybindings  admissionregistration.k8s.io/v1 false MutatingAdmissionPolicyBinding
mutatingwebhookconfigurations  admissionregistration.k8s.io/v1 false MutatingWebhookConfiguration
validatingadmissionpolicies  admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicy
validatingadmissionpolicybindings  admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicyBinding
validatingwebhookconfigurations  admissionregistration.k8s.io/v1 false ValidatingWebhookConfiguration
customresourcedefinitions crd,crds apiextensions.k8s.io/v1 false CustomResourceDefinition
apiservices  apiregistration.k8s.io/v1 false APIService
controllerrevisions  apps/v1 true ControllerRevision
daemonsets ds apps/v1 true DaemonSet
deployments deploy apps/v1 true Deployment
replicasets rs apps/v1 true ReplicaSet
statefulsets sts apps/v1 true StatefulSet
selfsubjectreviews  authentication.k8s.io/v1 false SelfSubjectReview
tokenreviews  authentication.k8s.io/v1 false TokenReview
localsubjectaccessreviews  authorization.k8s.io/v1 true LocalSubjectAccessReview
selfsubjectaccessreviews  authorization.k8s.io/v1 false SelfSubjectAccessReview
selfsubjectrulesreviews  authorization.k8s.io/v1 false SelfSubjectRulesReview
subjectaccessreviews  authorization.k8s.io/v1 false SubjectAccessReview
horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler
cronjobs cj batch/v1 true CronJob
jobs  batch/v1 true Job
certificatesigningrequests csr certificates.k8s.io/v1 false CertificateSigningRequest
clustertrustbundles  certificates.k8s.io/v1 false ClusterTrustBundle
podcertificaterequests  certificates.k8s.io/v1 true PodCertificateRequest
leases  coordination.k8s.io/v1 true Lease
endpointslices  discovery.k8s.io/v1 true EndpointSlice
events ev events.k8s.io/v1 true Event
flowschemas  flowcontrol.apiserver.k8s.io/v1 false FlowSchema
prioritylevelconfigurations  flowcontrol.apiserver.k8s.io/v1 false PriorityLevelConfiguration
ingressclasses  networking.k8s.io/v1 false IngressClass
ingresses ing networking.k8s.io/v1 true Ingress
ipaddresses ip networking.k8s.io/v1 false IPAddress
networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy
servicecidrs  networking.k8s.io/v1 false ServiceCIDR
runtimeclasses  node.k8s.io/v1 false RuntimeClass
poddisruptionbudgets pdb policy/v1 true PodDisruptionBudget
clusterrolebindings  rbac.authorization.k8s.io/v1 false ClusterRoleBinding
clusterroles  rbac.authorization.k8s.io/v1 false ClusterRole
rolebindings  rbac.authorization.k8s.io/v1 true RoleBinding
roles  rbac.authorization.k8s.io/v1 true Role
deviceclasses  resource.k8s.io/v1 false DeviceClass
devicetaintrules  resource.k8s.io/v1 false DeviceTaintRule
resourceclaims  resource.k8s.io/v1 true ResourceClaim
resourceclaimtemplates  resource.k8s.io/v1 true ResourceClaimTemplate
resourceslices  resource.k8s.io/v1 false ResourceSlice
priorityclasses pc scheduling.k8s.io/v1 false PriorityClass
csidrivers  storage.k8s.io/v1 false CSIDriver
csinodes  storage.k8s.io/v1 false CSINode
csistoragecapacities  storage.k8s.io/v1 true CSIStorageCapacity
storageclasses sc storage.k8s.io/v1 false StorageClass
volumeattachments  storage.k8s.io/v1 false VolumeAttachment
volumeattributesclasses vac storage.k8s.io/v1 false VolumeAttributesClass
storageversionmigrations  storagemigration.k8s.io/v1 false StorageVersionMigration
"""


def _rows(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_api_resources_lists_what_a_v1_37_kind_cluster_serves(kubectl):
    out = _rows(kubectl("api-resources").stdout)
    assert out[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    got = [(r[0], r[1] if len(r) == 5 else "", r[-3], r[-2], r[-1]) for r in out[1:]]
    wanted = []
    for line in API_RESOURCES.strip().splitlines():
        name, rest = line.split(" ", 1)
        parts = rest.split()
        short = "" if rest.startswith(" ") else parts.pop(0)
        wanted.append((name, short, *parts))
    assert got == wanted


def test_api_versions_and_the_all_category(kubectl):
    versions = kubectl("api-versions").stdout.split()
    assert {"autoscaling/v1", "autoscaling/v2", "batch/v1", "storage.k8s.io/v1", "node.k8s.io/v1",
            "apiregistration.k8s.io/v1", "storagemigration.k8s.io/v1"} <= set(versions)
    all_kinds = _rows(kubectl("api-resources", "--categories=all", "-o", "name").stdout)
    assert sorted(r[0] for r in all_kinds) == sorted([
        "pods", "replicationcontrollers", "services", "daemonsets.apps", "deployments.apps", "replicasets.apps",
        "statefulsets.apps", "horizontalpodautoscalers.autoscaling", "cronjobs.batch", "jobs.batch"])


def test_explain_reads_the_new_kinds_from_openapi(kubectl):
    out = kubectl("explain", "statefulset.spec.volumeClaimTemplates").stdout
    assert re.search(r"^KIND:\s+StatefulSet$", out, re.M) and "PersistentVolumeClaim" in out
    out = kubectl("explain", "hpa.spec.targetCPUUtilizationPercentage", "--api-version=autoscaling/v1").stdout
    assert re.search(r"^VERSION:\s+v1$", out, re.M)
    out = kubectl("explain", "resourcequota.spec.hard").stdout
    assert "FIELD: hard <map[string]Quantity>" in out


def test_componentstatus_is_deprecated_and_healthy(kubectl):
    proc = kubectl("get", "componentstatuses")
    assert proc.stderr.strip() == "Warning: v1 ComponentStatus is deprecated in v1.19+"
    assert _rows(proc.stdout) == [["NAME", "STATUS", "MESSAGE", "ERROR"], ["scheduler", "Healthy", "ok"],
                                  ["controller-manager", "Healthy", "ok"], ["etcd-0", "Healthy", "ok"]]
    refused = kubectl("delete", "cs", "scheduler", check=False)
    assert "the server does not allow this method on the requested resource" in refused.stderr


def test_default_storage_class_and_local_apiservices_as_kind_ships_them(kubectl):
    rows = _rows(kubectl("get", "storageclass").stdout)
    assert rows[0] == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]
    assert rows[1][:-1] == ["standard (default)", "rancher.io/local-path", "Delete", "WaitForFirstConsumer", "false"]
    services = {r[0]: r[1:3] for r in _rows(kubectl("get", "apiservices").stdout)[1:]}
    assert services["v1."] == ["Local", "True"] and services["v1.apps"] == ["Local", "True"]
    assert services["v2.autoscaling"] == ["Local", "True"]
    svc = json.loads(kubectl("get", "apiservice", "v1.apps", "-o", "json").stdout)
    assert svc["spec"] == {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}
    assert svc["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "onstart"}
    pods = kubectl("get", "pods", "-n", "local-path-storage", "-o", "name").stdout
    assert pods.startswith("pod/local-path-provisioner-")


def test_bindings_assign_a_pod_to_a_node(cluster, kubectl):
    from kubernetes import client

    kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: Pod
metadata: {name: hand-bound}
spec:
  schedulerName: nobody
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
""")
    api = client.CoreV1Api(cluster.client())
    body = client.V1Binding(metadata=client.V1ObjectMeta(name="hand-bound"),
                            target=client.V1ObjectReference(kind="Node", name="gpulab-worker"))
    api.create_namespaced_binding("default", body, _preload_content=False)
    assert api.read_namespaced_pod("hand-bound", "default").spec.node_name == "gpulab-worker"
    kubectl("delete", "pod", "hand-bound", "--wait=false")


def test_endpoints_are_deprecated_and_apply_prune_works(kubectl, tmp_path):
    warned = kubectl("get", "endpoints", "kubernetes")
    assert "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice" in warned.stderr
    assert re.split(r"\s{2,}", warned.stdout.splitlines()[1])[1].endswith(":6443")
    both = tmp_path / "both.yaml"
    both.write_text("""
apiVersion: v1
kind: ConfigMap
metadata: {name: keep, labels: {app: prune-me}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: drop, labels: {app: prune-me}}
""")
    kubectl("apply", "-f", str(both), "-l", "app=prune-me", "--prune")
    one = tmp_path / "one.yaml"
    one.write_text(both.read_text().split("---")[0])
    diff = kubectl("diff", "-f", str(one), "-l", "app=prune-me", "--prune", check=False)
    assert diff.returncode == 1 and "-  name: drop" in diff.stdout
    out = kubectl("apply", "-f", str(one), "-l", "app=prune-me", "--prune").stdout
    assert "configmap/drop pruned" in out
    assert kubectl("get", "configmap", "drop", check=False).returncode == 1


def test_printers_of_cluster_kinds(kubectl):
    kubectl("apply", "-f", "-", input="""
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx
  annotations: {ingressclass.kubernetes.io/is-default-class: "true"}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny}
spec: {podSelector: {matchLabels: {app: db}}}
""")
    assert _rows(kubectl("get", "runtimeclass", "nvidia").stdout)[1][:2] == ["nvidia", "nvidia"]
    ing = _rows(kubectl("get", "ingress", "web").stdout)
    assert ing[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert ing[1][:4] == ["web", "nginx", "web.example.com", "80"]  # DefaultIngressClass filled the class
    assert _rows(kubectl("get", "netpol", "deny").stdout)[1][:2] == ["deny", "app=db"]
    policy = json.loads(kubectl("get", "netpol", "deny", "-o", "json").stdout)
    assert policy["spec"]["policyTypes"] == ["Ingress"]


def test_hpa_is_served_as_v2_and_v1(cluster, kubectl):
    from kubernetes import client

    kubectl("create", "deployment", "scaled", "--image=nginx")
    kubectl("autoscale", "deployment", "scaled", "--min=1", "--max=4", "--cpu=60%")
    rows = _rows(kubectl("get", "hpa", "scaled").stdout)
    assert rows[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert rows[1][:5] == ["scaled", "Deployment/scaled", "cpu: <unknown>/60%", "1", "4"]
    v1 = client.AutoscalingV1Api(cluster.client()).read_namespaced_horizontal_pod_autoscaler("scaled", "default")
    assert v1.spec.target_cpu_utilization_percentage == 60 and v1.spec.max_replicas == 4
    v2 = client.AutoscalingV2Api(cluster.client()).read_namespaced_horizontal_pod_autoscaler("scaled", "default")
    assert v2.spec.metrics[0].resource.target.average_utilization == 60


def test_csr_approval_through_the_approval_subresource(kubectl):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import base64

    key = ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "learner")])).sign(key, hashes.SHA256())
    pem = base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode()
    kubectl("apply", "-f", "-", input=f"""
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {{name: learner}}
spec:
  request: {pem}
  signerName: kubernetes.io/kube-apiserver-client
  expirationSeconds: 86400
  usages: [client auth]
""")
    row = _rows(kubectl("get", "csr", "learner").stdout)
    assert row[0] == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    assert row[1][2:] == ["kubernetes.io/kube-apiserver-client", "kubernetes-admin", "24h", "Pending"]
    assert kubectl("certificate", "approve", "learner").stdout.strip() == \
        "certificatesigningrequest.certificates.k8s.io/learner approved"
    assert _rows(kubectl("get", "csr", "learner").stdout)[1][-1].startswith("Approved")


# (manifest, the message kubectl prints): a few of each new kind's validation errors, with upstream's words
INVALID = [
    ("""apiVersion: apps/v1
kind: StatefulSet
metadata: {name: Bad_Name}
spec:
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: db}}, spec: {containers: [{name: c, image: nginx}]}}""",
     ['metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case '
      'alphanumeric characters or \'-\', and must start and end with an alphanumeric character (e.g. '
      '\'my-name\',  or \'123-abc\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?\')',
      'spec.template.metadata.labels: Invalid value: {"app":"db"}: `selector` does not match template `labels`']),
    ("""apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  podManagementPolicy: Random
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 0}}
  selector: {matchLabels: {app: x}}
  template: {metadata: {labels: {app: x}}, spec: {containers: [{name: c, image: nginx}]}}""",
     ["spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
      "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0"]),
    ("""apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 25 * * *"
  concurrencyPolicy: Sometimes
  jobTemplate: {spec: {template: {spec: {restartPolicy: Always, containers: [{name: c, image: busybox}]}}}}""",
     ['spec.schedule: Invalid value: "0 25 * * *": end of range (25) above maximum (23): 25',
      'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"',
      'spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']),
    ("""apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: claim}
spec:
  accessModes: [ReadWriteSometimes]
  resources: {requests: {storage: "0"}}""",
     ['spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", '
      '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
      'spec.resources[storage]: Invalid value: "0": must be greater than zero']),
    ("""apiVersion: v1
kind: PersistentVolume
metadata: {name: vol}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]""",
     ['PersistentVolume "vol" is invalid: spec: Required value: must specify a volume type']),
    ("""apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: ""
volumeBindingMode: Later""",
     ['provisioner: Required value', 'volumeBindingMode: Unsupported value: "Later": supported values: '
                                     '"Immediate", "WaitForFirstConsumer"']),
    ("""apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec:
  hard: {gpus: "2"}
  scopes: [BestEffort, NotBestEffort]""",
     ['spec.hard[gpus]: Invalid value: "gpus": must be a standard resource type or fully qualified',
      'spec.hard[gpus]: Invalid value: "gpus": must be a standard resource for quota',
      'spec.scopes: Invalid value: ["BestEffort","NotBestEffort"]: conflicting scopes']),
    ("""apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec:
  limits:
  - type: Container
    min: {cpu: "2"}
    max: {cpu: "1"}""",
     ['spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1']),
    ("""apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: rc}
handler: Not_A_Label""",
     ['handler: Invalid value: "Not_A_Label": a lowercase RFC 1123 label must consist of']),
    ("""apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing}
spec:
  rules:
  - host: 10.0.0.1
    http: {paths: [{path: foo, pathType: Exact, backend: {service: {name: web}}}]}""",
     ['spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address',
      'spec.rules[0].http.paths[0].path: Invalid value: "foo": must be an absolute path',
      'spec.rules[0].http.paths[0].backend: Required value: port name or number is required']),
    ("""apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa}
spec:
  scaleTargetRef: {kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 2""",
     ['spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`']),
    ("""apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  selector: {app: a}
  template: {metadata: {labels: {app: b}}, spec: {containers: [{name: c, image: nginx}]}}""",
     ['spec.template.metadata.labels: Invalid value: {"app":"b"}: `selector` does not match template `labels`']),
    ("""apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: hook}
webhooks:
- name: check
  clientConfig: {}""",
     ['webhooks[0].name: Invalid value: "check": should be a domain with at least three segments separated by '
      'dots', 'webhooks[0].sideEffects: Required value: must specify one of "None", "NoneOnDryRun"',
      'webhooks[0].clientConfig: Required value: exactly one of url or service is required']),
]


@pytest.mark.parametrize("manifest, messages", INVALID, ids=[m.split("kind: ")[1].split()[0] + str(i)
                                                              for i, (m, _) in enumerate(INVALID)])
def test_invalid_specs_are_refused_with_upstreams_words(kubectl, manifest, messages):
    proc = kubectl("create", "-f", "-", input=manifest, check=False)
    assert proc.returncode == 1
    assert re.match(r'The \w+ "[\w-]+" is invalid: ', proc.stderr), proc.stderr
    for message in messages:
        assert message in proc.stderr, proc.stderr
    assert kubectl("get", "--raw", "/readyz").stdout == "ok"
