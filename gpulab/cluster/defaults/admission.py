"""The mutating admission plugins a pod meets on create, in kube-apiserver's order.

Ports of plugin/pkg/admission/serviceaccount/admission.go (default service
account, the projected ``kube-api-access-xxxxx`` token volume and its mounts,
image pull secrets), plugin/pkg/admission/priority/admission.go (priority and
preemption policy from the PriorityClass) and
plugin/pkg/admission/defaulttolerationseconds/admission.go (300 s tolerations
for the not-ready and unreachable NoExecute taints). A rejection is the 403
``pods "x" is forbidden: ...`` that admission.NewForbidden builds.
"""
from __future__ import annotations

import random
from typing import Callable

from ..errors import ApiError
from ..registry import ResourceType
from ..validation.priority_classes import SYSTEM_PRIORITY_CLASSES

Lookup = Callable[..., "dict | None"]
ListObjects = Callable[[str], list]

TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
_MIRROR = "kubernetes.io/config.mirror"
PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"
_NO_EXECUTE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def forbidden(rt: ResourceType, name: str, reason: str) -> ApiError:
    """admission.NewForbidden -> errors.NewForbidden."""
    resource = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
    message = f'{resource} "{name}" is forbidden: {reason}' if name else f"{resource} is forbidden: {reason}"
    details = {"name": name, "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    if not name:
        del details["name"]
    return ApiError(403, "Forbidden", message, details)


def generate_name(base: str) -> str:
    """names.SimpleNameGenerator.GenerateName."""
    return base[:58] + "".join(random.choice(_NAME_ALPHABET) for _ in range(5))


def token_volume(name: str) -> dict:
    """TokenVolumeSource(): the projected service account token, CA bundle and namespace."""
    return {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}}


def _mount_token(pod: dict) -> None:
    """mountServiceAccountToken: reuse an existing kube-api-access volume or add one; mount it everywhere."""
    spec = pod["spec"]
    volume_name = next((v["name"] for v in spec.get("volumes") or []
                        if (v.get("name") or "").startswith(TOKEN_VOLUME_PREFIX)), "")
    has_volume = bool(volume_name)
    volume_name = volume_name or generate_name(TOKEN_VOLUME_PREFIX)
    needs_volume = False
    for key in ("initContainers", "containers"):
        for ctr in spec.get(key) or []:
            mounts = ctr.get("volumeMounts") or []
            if not any(m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                ctr["volumeMounts"] = mounts + [{"name": volume_name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}]
                needs_volume = True
    if needs_volume and not has_volume:
        spec["volumes"] = (spec.get("volumes") or []) + [token_volume(volume_name)]


def admit_service_account(rt: ResourceType, pod: dict, lookup: Lookup) -> None:
    meta, spec = pod.get("metadata") or {}, pod.setdefault("spec", {})
    if _MIRROR in (meta.get("annotations") or {}):
        return
    name = spec.get("serviceAccountName") or "default"
    spec["serviceAccountName"] = spec["serviceAccount"] = name
    namespace = meta.get("namespace", "")
    account = lookup("serviceaccounts", name, namespace)
    if account is None:
        raise forbidden(rt, meta.get("name", ""), f"error looking up service account {namespace}/{name}: "
                                                  f'serviceaccount "{name}" not found')
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = account.get("automountServiceAccountToken")
    if automount is None or automount:
        _mount_token(pod)
    if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [{"name": s.get("name", "")} for s in account["imagePullSecrets"]]


def _default_priority_class(list_objects: ListObjects | None) -> dict | None:
    """getDefaultPriorityClass: the globalDefault class with the lowest value."""
    defaults = [pc for pc in (list_objects(PRIORITY_CLASSES) if list_objects else []) if pc.get("globalDefault")]
    return min(defaults, key=lambda pc: pc.get("value", 0)) if defaults else None


def admit_priority(rt: ResourceType, pod: dict, lookup: Lookup, list_objects: ListObjects | None) -> None:
    spec, name = pod.setdefault("spec", {}), (pod.get("metadata") or {}).get("name", "")
    class_name = spec.get("priorityClassName") or ""
    if not class_name:
        default = _default_priority_class(list_objects)
        if default is None:
            priority, policy = 0, "PreemptLowerPriority"
        else:
            priority, policy = int(default.get("value", 0)), default.get("preemptionPolicy")
            spec["priorityClassName"] = default["metadata"]["name"]
    else:
        pc = lookup(PRIORITY_CLASSES, class_name)
        if pc is None and class_name in SYSTEM_PRIORITY_CLASSES:  # bootstrapped, even when the store lacks them
            pc = {"value": SYSTEM_PRIORITY_CLASSES[class_name], "preemptionPolicy": "PreemptLowerPriority"}
        if pc is None:
            raise forbidden(rt, name, f"no PriorityClass with name {class_name} was found")
        priority, policy = int(pc.get("value", 0)), pc.get("preemptionPolicy")
    if spec.get("priority") is not None and spec["priority"] != priority:
        raise forbidden(rt, name, f"the integer value of priority ({spec['priority']}) must not be provided in pod "
                                  f"spec; priority admission controller computed {priority} from the given "
                                  "PriorityClass name")
    spec["priority"] = priority
    if policy is not None:
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise forbidden(rt, name, f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not "
                                      f"be provided in pod spec; priority admission controller computed {policy} "
                                      "from the given PriorityClass name")
        spec["preemptionPolicy"] = policy


def keep_priority(pod: dict, old: dict) -> None:
    """Priority admission on update: a replacement that leaves out ``priority`` or ``preemptionPolicy`` keeps
    the stored ones (validation then refuses any other change to them)."""
    spec, old_spec = pod.setdefault("spec", {}), old.get("spec") or {}
    for field in ("priority", "preemptionPolicy"):
        if spec.get(field) is None and old_spec.get(field) is not None:
            spec[field] = old_spec[field]


def admit_priority_class(rt: ResourceType, pc: dict, list_objects: ListObjects | None) -> None:
    """validatePriorityClass: only one PriorityClass may be the global default."""
    if not pc.get("globalDefault"):
        return
    existing = _default_priority_class(list_objects)
    if existing is not None:
        raise forbidden(rt, (pc.get("metadata") or {}).get("name", ""),
                        f"PriorityClass {existing['metadata']['name']} is already marked as default. "
                        "Only one default can exist")


def admit_default_toleration_seconds(pod: dict) -> None:
    spec = pod.setdefault("spec", {})
    tolerations = spec.get("tolerations") or []
    for taint in _NO_EXECUTE_TAINTS:
        tolerated = any(t.get("key") in (taint, "", None) and t.get("effect") in ("NoExecute", "", None)
                        for t in tolerations)
        if not tolerated:
            tolerations = tolerations + [{"key": taint, "operator": "Exists", "effect": "NoExecute",
                                          "tolerationSeconds": 300}]
    spec["tolerations"] = tolerations
