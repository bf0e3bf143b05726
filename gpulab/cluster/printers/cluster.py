"""Printers for cluster-level kinds: component statuses, resource quotas, runtime classes, certificate requests
and trust bundles, admission configuration and policies, API priority and fairness, API services and storage
version migrations.

Ports of printComponentStatus, printResourceQuota, printRuntimeClass,
printCertificateSigningRequest (extractCSRStatus), printClusterTrustBundle,
printMutatingWebhook, printValidatingWebhook, printValidatingAdmissionPolicy(Binding),
printMutatingAdmissionPolicy(Binding), printFlowSchema, printPriorityLevelConfiguration and
printStorageVersionMigration in kubernetes/pkg/printers/internalversion/printers.go, and of the APIService
table convertor of kube-aggregator (pkg/registry/apiservice/etcd/etcd.go).
"""
from __future__ import annotations

from ..humanize import human_duration
from ..quantity import canonical
from .cells import age, format_label_selector, name
from .columns import age_column, column, doc, name_column

CERTIFICATES = "io.k8s.api.certificates.v1."
FLOWCONTROL = "io.k8s.api.flowcontrol.v1."


def componentstatus_columns() -> list[dict]:
    return [name_column(), column("Status", description="Status of the component conditions"),
            column("Message", description="Message of the component conditions"),
            column("Error", description="Error of the component conditions")]


def componentstatus_cells(cs: dict, now_us: int) -> list:
    status, message, error = "Unknown", "", ""
    for cond in cs.get("conditions") or []:
        if cond.get("type") == "Healthy":
            status = "Healthy" if cond.get("status") == "True" else "Unhealthy"
            message, error = cond.get("message", ""), cond.get("error", "")
            break
    return [name(cs), status, message, error]


def resourcequota_columns() -> list[dict]:
    return [name_column(),
            column("Request", description="Request represents a minimum amount of cpu/memory that a container may "
                                          "consume."),
            column("Limit", description="Limits control the maximum amount of cpu/memory that a container may use "
                                        "independent of contention on the node."), age_column()]


def resourcequota_cells(quota: dict, now_us: int) -> list:
    status = quota.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    requests, limits = [], []
    for resource in sorted(hard):
        text = f"{resource}: {canonical(used.get(resource, 0))}/{canonical(hard[resource])}"
        parts = resource.split(".")
        (limits if len(parts) > 1 and parts[0] == "limits" else requests).append(text)
    return [name(quota), ", ".join(requests), ", ".join(limits), age(quota, now_us)]


def runtimeclass_columns() -> list[dict]:
    # Upstream takes the description from ObjectMeta's (missing) "handler" doc.
    return [name_column(), column("Handler", description=doc("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                                                             "handler")), age_column()]


def runtimeclass_cells(rc: dict, now_us: int) -> list:
    return [name(rc), rc.get("handler", ""), age(rc, now_us)]


# --- certificates ----------------------------------------------------------------------
def csr_columns() -> list[dict]:
    spec = CERTIFICATES + "CertificateSigningRequestSpec"
    return [name_column(), age_column(), column("SignerName", description=doc(spec, "signerName")),
            column("Requestor", description=doc(spec, "request")),
            column("RequestedDuration", description=doc(spec, "expirationSeconds")),
            column("Condition", description=doc(CERTIFICATES + "CertificateSigningRequestStatus", "conditions"))]


def csr_condition(csr: dict) -> str:
    """extractCSRStatus: Denied beats Approved beats Pending; then Failed and Issued."""
    status = csr.get("status") or {}
    types = {c.get("type") for c in status.get("conditions") or []}
    text = "Denied" if "Denied" in types else ("Approved" if "Approved" in types else "Pending")
    if "Failed" in types:
        text += ",Failed"
    if status.get("certificate"):
        text += ",Issued"
    return text


def csr_cells(csr: dict, now_us: int) -> list:
    from datetime import timedelta

    spec = csr.get("spec") or {}
    seconds = spec.get("expirationSeconds")
    duration = "<none>" if seconds is None else human_duration(timedelta(seconds=int(seconds)))
    return [name(csr), age(csr, now_us), spec.get("signerName") or "<none>", spec.get("username", ""), duration,
            csr_condition(csr)]


def clustertrustbundle_columns() -> list[dict]:
    return [name_column(), column("SignerName", description=doc(CERTIFICATES + "ClusterTrustBundleSpec",
                                                                "signerName"))]


def clustertrustbundle_cells(bundle: dict, now_us: int) -> list:
    return [name(bundle), (bundle.get("spec") or {}).get("signerName") or "<none>"]


# --- admission configuration and policies ----------------------------------------------
def webhook_columns() -> list[dict]:
    return [name_column(), column("Webhooks", "integer",
                                  "Webhooks indicates the number of webhooks registered in this configuration"),
            age_column()]


def webhook_cells(config: dict, now_us: int) -> list:
    return [name(config), len(config.get("webhooks") or []), age(config, now_us)]


def _param_kind(policy: dict) -> str:
    kind = (policy.get("spec") or {}).get("paramKind")
    return "<unset>" if kind is None else f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}"


def validating_policy_columns() -> list[dict]:
    return [name_column(), column("Validations", "integer", "Validations indicates the number of validation rules "
                                                            "defined in this configuration"),
            column("ParamKind", description="ParamKind specifies the kind of resources used to parameterize this "
                                            "policy"), age_column()]


def validating_policy_cells(policy: dict, now_us: int) -> list:
    return [name(policy), len((policy.get("spec") or {}).get("validations") or []), _param_kind(policy),
            age(policy, now_us)]


def mutating_policy_columns() -> list[dict]:
    return [name_column(), column("Mutations", "integer", "Mutation indicates the number of mutations rules defined "
                                                          "in this configuration"),
            column("ParamKind", description="ParamKind specifies the kind of resources used to parameterize this "
                                            "policy"), age_column()]


def mutating_policy_cells(policy: dict, now_us: int) -> list:
    return [name(policy), len((policy.get("spec") or {}).get("mutations") or []), _param_kind(policy),
            age(policy, now_us)]


def policy_binding_columns() -> list[dict]:
    return [name_column(),
            column("PolicyName", description="PolicyName indicates the policy definition which the policy binding "
                                             "binded to"),
            column("ParamRef", description="ParamRef indicates the param resource which sets the configration param"),
            age_column()]


def policy_binding_cells(binding: dict, now_us: int) -> list:
    spec = binding.get("spec") or {}
    ref = spec.get("paramRef")
    param = "<unset>"
    if ref is not None:
        if ref.get("name"):
            param = f"{ref['namespace']}/{ref['name']}" if ref.get("namespace") else f"*/{ref['name']}"
        elif ref.get("selector") is not None:
            param = format_label_selector(ref["selector"])
    return [name(binding), spec.get("policyName", ""), param, age(binding, now_us)]


# --- API priority and fairness ------------------------------------------------------------
def flowschema_columns() -> list[dict]:
    spec = FLOWCONTROL + "FlowSchemaSpec"
    return [name_column(), column("PriorityLevel", description=doc(FLOWCONTROL
                                                                  + "PriorityLevelConfigurationReference", "name")),
            column("MatchingPrecedence", description=doc(spec, "matchingPrecedence")),
            column("DistinguisherMethod", description=doc(spec, "distinguisherMethod")), age_column(),
            column("MissingPL", description="references a broken or non-existent PriorityLevelConfiguration")]


def flowschema_cells(fs: dict, now_us: int) -> list:
    spec = fs.get("spec") or {}
    method = spec.get("distinguisherMethod")
    dangling = next((c.get("status", "") for c in (fs.get("status") or {}).get("conditions") or []
                     if c.get("type") == "Dangling"), "?")
    return [name(fs), (spec.get("priorityLevelConfiguration") or {}).get("name", ""),
            spec.get("matchingPrecedence", 0), "<none>" if method is None else method.get("type", ""),
            age(fs, now_us), dangling]


def flowschema_order(items: list[dict]) -> list[dict]:
    """FlowSchemaSequence: by matchingPrecedence, then name."""
    return sorted(items, key=lambda fs: ((fs.get("spec") or {}).get("matchingPrecedence", 0), name(fs)))


def prioritylevel_columns() -> list[dict]:
    queuing = FLOWCONTROL + "QueuingConfiguration"
    return [name_column(), column("Type", description=doc(FLOWCONTROL + "PriorityLevelConfigurationSpec", "type")),
            column("NominalConcurrencyShares", description=doc(FLOWCONTROL + "LimitedPriorityLevelConfiguration",
                                                               "nominalConcurrencyShares")),
            column("Queues", description=doc(queuing, "queues")),
            column("HandSize", description=doc(queuing, "handSize")),
            column("QueueLengthLimit", description=doc(queuing, "queueLengthLimit")), age_column()]


def prioritylevel_cells(plc: dict, now_us: int) -> list:
    spec = plc.get("spec") or {}
    shares = queues = hand = length = "<none>"
    limited = spec.get("limited")
    if limited is not None:
        shares = limited.get("nominalConcurrencyShares", 0)
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if queuing is not None:
            queues, hand, length = (queuing.get("queues", 0), queuing.get("handSize", 0),
                                    queuing.get("queueLengthLimit", 0))
    return [name(plc), spec.get("type", ""), shares, queues, hand, length, age(plc, now_us)]


# --- API services, storage version migrations -----------------------------------------------
def apiservice_columns() -> list[dict]:
    return [name_column(), column("Service", description="The reference to the service that hosts this API "
                                                         "endpoint."),
            column("Available", description="Whether this service is available."), age_column()]


def apiservice_cells(svc: dict, now_us: int) -> list:
    ref = (svc.get("spec") or {}).get("service")
    service = "Local" if ref is None else f"{ref.get('namespace', '')}/{ref.get('name', '')}"
    available = "Unknown"
    for cond in (svc.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Available":
            available = cond.get("status", "")
            if available != "True" and cond.get("reason"):
                available = f"{available} ({cond['reason']})"
            break
    return [name(svc), service, available, age(svc, now_us)]


def storageversionmigration_columns() -> list[dict]:
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    return [column("Name", description=doc(meta, "name")),
            column("Resource", description="Fully qualified resource to migrate")]


def storageversionmigration_cells(svm: dict, now_us: int) -> list:
    resource = (svm.get("spec") or {}).get("resource") or {}
    return [name(svm), f"{resource.get('resource', '')}.{resource.get('version', '')}.{resource.get('group', '')}"]
