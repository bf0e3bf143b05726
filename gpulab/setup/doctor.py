"""``gpulab doctor``: what a cluster's GPU stack has and lacks, each gap with the command that fills it.

It reads, through the official client and any kubeconfig, what a person would
check by hand on a real cluster: the GPU Operator's Deployment, the
``ClusterPolicy`` state (``ready``/``notReady``/``ignored``, NVIDIA/gpu-operator
``api/nvidia/v1``), the operand DaemonSets the policy enables (ready counts, the
operator's ``isDaemonSetReady``), and per GPU node the GPU Feature Discovery
labels, ``nvidia.com/*`` allocatable resources, ``nvidia.com/gpu`` taints,
time-slicing and MIG state. A cluster whose nodes carry the
``gpulab.dev/gpu-model`` annotation (the embedded cluster, ``gpulab kind up``) is
reported as emulated: its next commands are ``gpulab`` ones, and the GPU stack
emulation's Lease is checked; elsewhere the next commands are NVIDIA's pinned
``helm install`` and ``kubectl``.

Findings are ``ok``, ``missing`` (the stack does not work until it is fixed;
the command exits 1), ``warn`` (works, but not as the course recommends) or
``info``. No tool does this across real and emulated clusters: NVIDIA's
troubleshooting guide is a list of kubectl commands to read by eye.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from urllib3.exceptions import HTTPError

from .. import kubeclient
from ..kubeclient import ApiException
from ..checks import gpus
from ..checks.lab01 import PINNED_DRIVER
from ..contract import GPU_COUNT_ANNOTATION, GPU_MODEL_ANNOTATION
from ..gpustack import chart, operands
from ..gpustack.operator import CLUSTERPOLICIES, daemonset_ready

OPERATOR_SELECTOR = "app.kubernetes.io/component=gpu-operator"
VALUES_FILE = "cluster-setup/real/gpu-operator-values.yaml"
GPU_TAINT = f"{gpus.GPU_TAINT['key']}={gpus.GPU_TAINT['value']}:{gpus.GPU_TAINT['effect']}"


@dataclass
class Finding:
    status: str                  # ok | missing | warn | info
    subject: str
    detail: str
    next: str | None = None
    node: str | None = None      # None: cluster-wide


@dataclass
class Report:
    server: str
    version: str | None
    emulated: bool
    findings: list[Finding] = field(default_factory=list)

    @property
    def missing(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "missing"]

    def add(self, status: str, subject: str, detail: str, next: str | None = None, node: str | None = None) -> None:
        self.findings.append(Finding(status, subject, detail, next, node))

    def as_dict(self) -> dict:
        return {"server": self.server, "version": self.version, "emulated": self.emulated,
                "ok": not self.missing, "findings": [asdict(f) for f in self.findings]}


def install_command(emulated: bool, kubeconfig: str | None) -> str:
    version, driver = chart.DEFAULT_VERSION, PINNED_DRIVER
    if emulated:
        target = f" --kubeconfig {kubeconfig}" if kubeconfig else ""
        return f"gpulab install gpu-operator --version {version} --set driver.version={driver}{target}"
    return (f"helm repo add nvidia {chart.CHART_REPOSITORY_URL} && helm repo update && helm install --wait "
            f"--generate-name -n gpu-operator --create-namespace nvidia/gpu-operator --version={version} "
            f"-f {VALUES_FILE}")


def _items(kube: kubeclient.Kube, res: kubeclient.Resource, namespace: str | None = None, **selectors) -> list[dict]:
    try:
        return kube.list(res, namespace, **selectors)["items"]
    except ApiException as exc:
        if exc.status == 404:
            return []
        raise


def _name(obj: dict) -> str:
    return obj["metadata"]["name"]


def _emulated_hardware(node: dict) -> tuple[str, int] | None:
    notes = node["metadata"].get("annotations") or {}
    if GPU_MODEL_ANNOTATION not in notes:
        return None
    return notes[GPU_MODEL_ANNOTATION], int(notes.get(GPU_COUNT_ANNOTATION) or 0)


def _lease_holder(kube: kubeclient.Kube) -> str | None:
    from ..gpustack.reconciler import LEASE_NAME, LEASE_NAMESPACE, LEASE_SECONDS

    lease = kube.try_get(kubeclient.LEASES, LEASE_NAME, LEASE_NAMESPACE)
    spec = (lease or {}).get("spec") or {}
    if not spec.get("holderIdentity") or not spec.get("renewTime"):
        return None
    renewed = datetime.strptime(spec["renewTime"][:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    fresh = (datetime.now(timezone.utc) - renewed).total_seconds() < LEASE_SECONDS
    return spec["holderIdentity"] if fresh else None


def _hardware(report: Report, nodes: list[dict], gpu_nodes: list[dict]) -> None:
    if report.emulated:
        listed = ", ".join(f"{_name(n)} ({hw[1]}x {hw[0]})" for n in gpu_nodes if (hw := _emulated_hardware(n)))
        report.add("ok", "GPU hardware", f"{len(gpu_nodes)} of {len(nodes)} nodes have simulated GPUs: {listed}")
    elif gpu_nodes:
        report.add("ok", "GPU hardware", f"{len(gpu_nodes)} of {len(nodes)} nodes have NVIDIA GPUs (NFD's "
                   "feature.node.kubernetes.io/pci-10de.present or the operator's nvidia.com/gpu.present)")
    else:
        report.add("info", "GPU hardware", f"none of {len(nodes)} nodes shows an NVIDIA GPU yet: node-feature-"
                   "discovery, installed with the GPU Operator, labels nodes with NVIDIA PCI devices "
                   "(feature.node.kubernetes.io/pci-10de.present=true)")


def _operator(report: Report, kube: kubeclient.Kube, namespace: str, install: str) -> tuple[str, bool]:
    """The operator Deployment's namespace and whether it is ready."""
    found = _items(kube, kubeclient.DEPLOYMENTS, namespace, label_selector=OPERATOR_SELECTOR)
    if not found:
        found = kube.request("GET", "/apis/apps/v1/deployments", query=[("labelSelector", OPERATOR_SELECTOR)])["items"]
    if not found:
        report.add("missing", "GPU Operator", f"no Deployment labelled {OPERATOR_SELECTOR} in any namespace",
                   install)
        return namespace, False
    deployment = found[0]
    ns = deployment["metadata"]["namespace"]
    wanted = (deployment.get("spec") or {}).get("replicas", 1)
    ready = (deployment.get("status") or {}).get("readyReplicas", 0)
    if ready >= wanted:
        report.add("ok", "GPU Operator", f"Deployment {ns}/{_name(deployment)}: {ready}/{wanted} ready")
        return ns, True
    report.add("missing", "GPU Operator", f"Deployment {ns}/{_name(deployment)}: {ready}/{wanted} ready",
               f"kubectl -n {ns} describe deployment {_name(deployment)}")
    return ns, False


def _policy(report: Report, kube: kubeclient.Kube, namespace: str, install: str, crd: dict | None) -> dict | None:
    policies = _items(kube, CLUSTERPOLICIES) if crd else []
    if not policies:
        what = "no ClusterPolicy" if crd else "no ClusterPolicy CRD (clusterpolicies.nvidia.com)"
        report.add("missing", "ClusterPolicy", f"{what}: the gpu-operator chart creates cluster-policy", install)
        return None
    for policy in policies:
        status = policy.get("status") or {}
        state = status.get("state") or "(no state yet)"
        spec = policy.get("spec") or {}
        driver = spec.get("driver") or {}
        pinned = "preinstalled (driver.enabled=false)" if driver.get("enabled") is False else driver.get("version", "?")
        pins = (f"driver {pinned}, toolkit "
                f"{spec.get('toolkit', {}).get('version', '?')}, device plugin "
                f"{spec.get('devicePlugin', {}).get('version', '?')}, mig.strategy "
                f"{spec.get('mig', {}).get('strategy', 'single')}")
        if state == "ready":
            report.add("ok", "ClusterPolicy", f"{_name(policy)}: ready ({pins})")
        elif state == "ignored":
            report.add("warn", "ClusterPolicy", f"{_name(policy)}: ignored (the operator reconciles one "
                       "ClusterPolicy only)", f"kubectl delete clusterpolicy {_name(policy)}")
        else:
            errors = [c.get("message") for c in status.get("conditions") or []
                      if c.get("type") == "Error" and c.get("status") == "True" and c.get("message")]
            report.add("missing", "ClusterPolicy", f"{_name(policy)}: {state}" + (f": {errors[0]}" if errors else ""),
                       f"kubectl -n {namespace} get pods")
    return next((p for p in policies if (p.get("status") or {}).get("state") != "ignored"), policies[0])


def _sharing_config(report: Report, spec: dict, namespace: str) -> None:
    config = (spec.get("devicePlugin") or {}).get("config") or {}
    if config.get("name"):
        report.add("info", "time-slicing config", f"device plugin config ConfigMap {namespace}/{config['name']}, "
                   f"default key {config.get('default') or '(none)'}")
    else:
        report.add("info", "time-slicing config", "none: every GPU is advertised once (nvidia.com/gpu = GPUs); "
                   "to share GPUs see cluster-setup/real/time-slicing-config.yaml")


def _operands(report: Report, kube: kubeclient.Kube, namespace: str, spec: dict) -> None:
    present = {_name(ds): ds for ds in _items(kube, kubeclient.DAEMONSETS, namespace)}
    for op in operands.OPERANDS:
        if not operands.is_enabled(spec, op):
            continue
        ds = present.get(op.name)
        subject = f"DaemonSet {op.name}"
        if ds is None:
            report.add("missing", subject, "not created by the operator yet",
                       f"kubectl -n {namespace} logs deployment/gpu-operator")
            continue
        status = ds.get("status") or {}
        desired, ready = status.get("desiredNumberScheduled", 0), status.get("numberReady", 0)
        if desired == 0:
            report.add("warn", subject, f"on no node: no node is labelled {op.deploy_label}=true")
        elif daemonset_ready(ds):
            report.add("ok", subject, f"{ready}/{desired} ready")
        else:
            report.add("missing", subject, f"{ready}/{desired} ready",
                       f"kubectl -n {namespace} get pods -l app={op.name} -o wide")


def _node(report: Report, node: dict, namespace: str, operator_up: bool) -> None:
    name = _name(node)
    labels = gpus.labels(node)
    gap = "missing" if operator_up else "info"
    waiting = "" if operator_up else " (appears once the GPU Operator runs)"
    if gpus.PRODUCT in labels:
        report.add("ok", "GFD labels", f"{gpus.PRODUCT}={labels[gpus.PRODUCT]}, {gpus.COUNT}="
                   f"{labels.get(gpus.COUNT, '?')}", node=name)
    else:
        report.add(gap, "GFD labels", f"no {gpus.PRODUCT} label{waiting}",
                   f"kubectl -n {namespace} logs daemonset/gpu-feature-discovery" if operator_up else None, node=name)
    advertised = gpus.nvidia_allocatable(node)
    if any(advertised.values()):
        report.add("ok", "allocatable", ", ".join(f"{k}: {v}" for k, v in advertised.items()), node=name)
    else:
        report.add(gap, "allocatable", f"no nvidia.com/* resources{waiting}",
                   f"kubectl -n {namespace} get pods -l app=nvidia-device-plugin-daemonset "
                   f"--field-selector spec.nodeName={name}" if operator_up else None, node=name)
    taints = gpus.gpu_taints(node)
    if taints:
        report.add("ok", "taints", ", ".join(f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in taints),
                   node=name)
    else:
        report.add("warn", "taints", "no nvidia.com/gpu taint: pods that need no GPU can take this node's CPU "
                   "and memory", f"kubectl taint nodes {name} {GPU_TAINT}", node=name)
    strategy = labels.get(gpus.SHARING)
    if strategy and strategy != "none":
        report.add("info", "sharing", f"{strategy}, {labels.get(gpus.REPLICAS, '?')} replicas per GPU", node=name)
    elif strategy:
        report.add("info", "sharing", "none (one pod per GPU)", node=name)
    _mig(report, name, labels, namespace)


def _mig(report: Report, name: str, labels: dict, namespace: str) -> None:
    if labels.get(operands.MIG_CAPABLE_LABEL) != "true":
        return
    config, state = labels.get(gpus.MIG_CONFIG), labels.get(gpus.MIG_STATE)
    detail = (f"{gpus.MIG_CONFIG}={config or '(unset)'}, state {state or '(none)'}, strategy "
              f"{labels.get(gpus.MIG_STRATEGY, '?')}")
    if state == "failed":
        report.add("missing", "MIG", detail, f"kubectl -n {namespace} logs daemonset/nvidia-mig-manager; then "
                   f"kubectl label node {name} {gpus.MIG_CONFIG}=all-disabled --overwrite", node=name)
    else:
        report.add("info", "MIG", detail, node=name)


def diagnose(kube: kubeclient.Kube, namespace: str = "gpu-operator", kubeconfig: str | None = None) -> Report:
    """Everything ``gpulab doctor`` reports about the cluster behind ``kube``."""
    server = kube.api_client.configuration.host
    try:
        version = kube.request("GET", "/version")["gitVersion"]
    except (ApiException, HTTPError, OSError) as exc:
        report = Report(server, None, False)
        report.add("missing", "API server", f"cannot reach {server}: {exc}",
                   "gpulab cluster up (embedded cluster), gpulab kind up (kind), or check your kubeconfig")
        return report
    nodes = _items(kube, kubeclient.NODES)
    emulated = any(_emulated_hardware(n) for n in nodes)
    report = Report(server, version, emulated)
    report.add("ok", "API server", f"Kubernetes {version}, {len(nodes)} nodes")
    gpu_nodes = [n for n in nodes if _emulated_hardware(n) or operands.has_gpu(gpus.labels(n)) or gpus.is_gpu_node(n)]
    _hardware(report, nodes, gpu_nodes)
    install = install_command(emulated, kubeconfig)
    crd = kube.try_get(kubeclient.CRDS, "clusterpolicies.nvidia.com")
    if emulated:
        holder = _lease_holder(kube)
        if holder:
            report.add("ok", "GPU stack emulation", f"running (Lease kube-system/gpulab-gpustack held by {holder})")
        elif crd:
            target = f" --kubeconfig {kubeconfig}" if kubeconfig else ""
            report.add("missing", "GPU stack emulation", "not running: nothing reconciles the ClusterPolicy",
                       f"gpulab gpustack run{target}")
        else:
            report.add("info", "GPU stack emulation", "starts with `gpulab install gpu-operator`")
    namespace, operator_ready = _operator(report, kube, namespace, install)
    policy = _policy(report, kube, namespace, install, crd)
    if policy is not None:
        spec = policy.get("spec") or {}
        _sharing_config(report, spec, namespace)
        _operands(report, kube, namespace, spec)
    for node in gpu_nodes:
        _node(report, node, namespace, operator_ready and policy is not None)
    return report


def render(report: Report) -> str:
    """The text ``gpulab doctor`` prints."""
    kind = "GPUs simulated by the gpulab emulation" if report.emulated else "real GPUs (or none yet)"
    lines = [f"gpulab doctor: {report.server} ({kind})"]
    current = object()
    for finding in report.findings:
        if finding.node != current:
            current = finding.node
            lines.append("" if finding.node is None else f"\nnode {finding.node}")
        lines.append(f"  {finding.status:<8} {finding.subject:<46} {finding.detail}")
        if finding.next:
            lines.append(f"  {'':<8} {'':<46} next: {finding.next}")
    missing = report.missing
    if missing:
        first = next((f.next for f in missing if f.next), None)
        lines.append(f"\n{len(missing)} missing" + (f"; start with: {first}" if first else ""))
    else:
        lines.append("\nnothing missing")
    return "\n".join(lines) + "\n"
