"""The RuntimeClass admission plugin: plugin/pkg/admission/runtimeclass/admission.go.

A pod naming a RuntimeClass that does not exist is rejected
(``pod rejected: RuntimeClass "x" not found``); a new pod gets the class's
pod overhead and its scheduling node selector and tolerations (a node
selector that contradicts the pod's is rejected); the overhead a pod carries
must be the class's.
"""
from __future__ import annotations

from ..defaults.admission import forbidden
from ..quantity import parse_quantity

RUNTIME_CLASSES = "runtimeclasses.node.k8s.io"


def _runtime_class(api, rt, pod: dict) -> dict | None:
    name = (pod.get("spec") or {}).get("runtimeClassName")
    if name is None:
        return None
    rc = api.store.get(RUNTIME_CLASSES, "", name)
    if rc is None:
        raise forbidden(rt, pod["metadata"].get("name", ""), f'pod rejected: RuntimeClass "{name}" not found')
    return rc


def _same_overhead(a: dict | None, b: dict | None) -> bool:
    return {k: parse_quantity(v) for k, v in (a or {}).items()} == {k: parse_quantity(v) for k, v in (b or {}).items()}


def admit(api, operation: str, rt, obj: dict, old: dict | None) -> None:
    if rt.storage_key != "pods" or operation != "CREATE":
        return
    rc = _runtime_class(api, rt, obj)
    if rc is None:
        return
    spec, name = obj.setdefault("spec", {}), obj["metadata"].get("name", "")
    fixed = (rc.get("overhead") or {}).get("podFixed")
    if fixed is not None:
        if spec.get("overhead") is not None and not _same_overhead(spec["overhead"], fixed):
            raise forbidden(rt, name, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        spec["overhead"] = dict(fixed)
    scheduling = rc.get("scheduling") or {}
    selector = dict(spec.get("nodeSelector") or {})
    for key, value in (scheduling.get("nodeSelector") or {}).items():
        if key in selector and selector[key] != value:
            raise forbidden(rt, name, f"pod rejected: conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                                      f"pod.spec.nodeSelector[{key}] = {selector[key]}")
        selector[key] = value
    if selector:
        spec["nodeSelector"] = selector
    tolerations = list(spec.get("tolerations") or [])
    for toleration in scheduling.get("tolerations") or []:
        if toleration not in tolerations:
            tolerations.append(toleration)
    if tolerations:
        spec["tolerations"] = tolerations


def validate(api, operation: str, rt, obj: dict, old: dict | None, dry_run: bool) -> None:
    if rt.storage_key != "pods":
        return
    rc = _runtime_class(api, rt, obj)
    overhead = (obj.get("spec") or {}).get("overhead")
    fixed = ((rc or {}).get("overhead") or {}).get("podFixed")
    name = obj["metadata"].get("name", "")
    if fixed is not None:
        if not _same_overhead(fixed, overhead):
            raise forbidden(rt, name, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    elif overhead is not None:
        raise forbidden(rt, name, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
