"""Defaults of pods and pod templates.

Ports of pkg/apis/core/v1/defaults.go (SetDefaults_Pod, SetDefaults_PodSpec,
SetDefaults_Container, SetDefaults_Volume, SetDefaults_Probe, ...) applied in
the order zz_generated.defaults.go calls them, and of the pod QoS class
computed by pkg/apis/core/helper/qos/qos.go (ComputePodQOS).
"""
from __future__ import annotations

import re
from fractions import Fraction

from .. import quantity
from ..registry import ResourceType
from .quantities import canonical, canonical_resource_list

_VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
)
_DEFAULT_MODE = 0o644  # SecretVolumeSourceDefaultMode and friends: 420
# A docker reference path component (distribution/reference): lowercase only.
_REPOSITORY = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$")


def image_tag(image: str) -> str:
    """parsers.ParseImageName's tag: "latest" when neither tag nor digest is given, "" on a parse error."""
    name, digest = (image.split("@", 1) + [""])[:2]
    last = name.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    repo = name[: len(name) - len(tag) - 1] if tag else name
    path = repo.split("/", 1)[1] if "/" in repo and ("." in repo.split("/")[0] or ":" in repo.split("/")[0]
                                                     or repo.split("/")[0] == "localhost") else repo
    if not image or not all(_REPOSITORY.match(part) for part in path.split("/")):
        return ""
    if not tag and not digest:
        return "latest"
    return tag


def _default_probe(probe: dict | None) -> None:
    if probe is None:
        return
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    _default_http_get(probe.get("httpGet"))


def _default_http_get(action: dict | None) -> None:
    if action is None:
        return
    if not action.get("path"):
        action["path"] = "/"
    if not action.get("scheme"):
        action["scheme"] = "HTTP"


def _default_field_ref(ref: dict | None) -> None:
    if ref is not None and not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"


def _default_container(rt: ResourceType, ctr: dict) -> None:
    """SetDefaults_Container plus the generated defaults of its members."""
    if not ctr.get("imagePullPolicy"):
        ctr["imagePullPolicy"] = "Always" if image_tag(ctr.get("image") or "") == "latest" else "IfNotPresent"
    if not ctr.get("terminationMessagePath"):
        ctr["terminationMessagePath"] = "/dev/termination-log"
    if not ctr.get("terminationMessagePolicy"):
        ctr["terminationMessagePolicy"] = "File"
    for port in ctr.get("ports") or []:
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for var in ctr.get("env") or []:
        _default_field_ref((var.get("valueFrom") or {}).get("fieldRef"))
    resources = ctr.get("resources")
    if resources is None:
        ctr["resources"] = {}
    else:
        canonical_resource_list(rt, resources.get("limits"))
        canonical_resource_list(rt, resources.get("requests"))
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(ctr.get(probe))
    for hook in ("postStart", "preStop"):
        _default_http_get(((ctr.get("lifecycle") or {}).get(hook) or {}).get("httpGet"))


def _default_volume(rt: ResourceType, vol: dict) -> None:
    """SetDefaults_Volume and the volume sources' own defaults."""
    if not any(vol.get(k) is not None for k in _VOLUME_SOURCES):
        vol["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        if vol.get(key) is not None and vol[key].get("defaultMode") is None:
            vol[key]["defaultMode"] = _DEFAULT_MODE
    for item in (vol.get("downwardAPI") or {}).get("items") or []:
        _default_field_ref(item.get("fieldRef"))
    for source in (vol.get("projected") or {}).get("sources") or []:
        token = source.get("serviceAccountToken")
        if token is not None and token.get("expirationSeconds") is None:
            token["expirationSeconds"] = 3600
        for item in (source.get("downwardAPI") or {}).get("items") or []:
            _default_field_ref(item.get("fieldRef"))
    if vol.get("hostPath") is not None and vol["hostPath"].get("type") is None:
        vol["hostPath"]["type"] = ""
    empty_dir = vol.get("emptyDir")
    if empty_dir is not None and empty_dir.get("sizeLimit") is not None:
        empty_dir["sizeLimit"] = canonical(rt, empty_dir["sizeLimit"])
    claim_spec = (((vol.get("ephemeral") or {}).get("volumeClaimTemplate") or {}).get("spec"))
    if claim_spec is not None and not claim_spec.get("volumeMode"):
        claim_spec["volumeMode"] = "Filesystem"


def default_pod_spec(rt: ResourceType, spec: dict) -> None:
    """SetDefaults_PodSpec and the defaults generated for every PodSpec (pods and templates).

    Also the v1 conversion of the deprecated ``serviceAccount`` field: read as
    ``serviceAccountName`` when that is empty, and always written back equal to it.
    """
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    else:
        spec.pop("serviceAccount", None)
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    for vol in spec.get("volumes") or []:
        _default_volume(rt, vol)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for ctr in spec.get(key) or []:
            _default_container(rt, ctr)
    canonical_resource_list(rt, spec.get("overhead"))
    if spec.get("resources") is not None:
        canonical_resource_list(rt, spec["resources"].get("limits"))
        canonical_resource_list(rt, spec["resources"].get("requests"))


def default_pod(rt: ResourceType, pod: dict) -> None:
    """SetObjectDefaults_Pod: SetDefaults_Pod, then the PodSpec defaults."""
    spec = pod.setdefault("spec", {})
    for key in ("containers", "initContainers"):
        for ctr in spec.get(key) or []:
            resources = ctr.get("resources") or {}
            if resources.get("limits") is not None:
                requests = resources.setdefault("requests", {})
                for name, value in resources["limits"].items():
                    requests.setdefault(name, value)
                ctr["resources"] = resources
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork"):
        for key in ("containers", "initContainers"):
            for ctr in spec.get(key) or []:
                for port in ctr.get("ports") or []:
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort", 0)
    default_pod_spec(rt, spec)


def compute_qos(spec: dict) -> str:
    """ComputePodQOS over containers and init containers (cpu and memory only); the pod strategy's
    PrepareForCreate stores it in ``status.qosClass``."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for ctr in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        resources = ctr.get("resources") or {}
        for name, value in (resources.get("requests") or {}).items():
            amount = quantity.parse_quantity(value)
            if name in ("cpu", "memory") and amount > 0:
                requests[name] = requests.get(name, Fraction(0)) + amount
        found = set()
        for name, value in (resources.get("limits") or {}).items():
            amount = quantity.parse_quantity(value)
            if name in ("cpu", "memory") and amount > 0:
                found.add(name)
                limits[name] = limits.get(name, Fraction(0)) + amount
        if not {"cpu", "memory"} <= found:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(n) == v for n, v in requests.items()) and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def drop_non_ephemeral_container_updates(new: dict, old: dict) -> dict:
    """The pods/ephemeralcontainers strategy's PrepareForUpdate (pkg/registry/core/pod/strategy.go
    dropNonEphemeralContainerUpdates): the stored pod with only ``spec.ephemeralContainers`` taken from the
    request, its status and the metadata fields ResetObjectMetaForStatus keeps (labels, annotations,
    finalizers, owner references, deletion timestamp) unchanged."""
    out = {**new, "spec": {**(old.get("spec") or {})}}
    ephemeral = (new.get("spec") or {}).get("ephemeralContainers")
    if ephemeral is None:
        out["spec"].pop("ephemeralContainers", None)
    else:
        out["spec"]["ephemeralContainers"] = ephemeral
    if "status" in old:
        out["status"] = old["status"]
    meta, ometa = dict(new.get("metadata") or {}), old.get("metadata") or {}
    for key in ("labels", "annotations", "finalizers", "ownerReferences", "deletionTimestamp", "generation"):
        if key in ometa:
            meta[key] = ometa[key]
        else:
            meta.pop(key, None)
    out["metadata"] = meta
    return out
