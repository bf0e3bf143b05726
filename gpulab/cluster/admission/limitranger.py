"""The LimitRanger admission plugin: plugin/pkg/admission/limitranger/admission.go.

Mutating (new pods only): each Container item of the namespace's
LimitRanges fills in the requests and limits a container left out, and the
pod records what was set in the ``kubernetes.io/limit-ranger`` annotation.
Validating (new pods, and claims on create and update): the min, max and
maxLimitRequestRatio of Container and Pod items, and the storage min and max
of PersistentVolumeClaim items, with upstream's messages such as
``maximum cpu usage per Container is 1, but limit is 2``.
"""
from __future__ import annotations

from ..defaults.admission import forbidden
from ..quantity import canonical, milli_value, parse_quantity, value
from ..quota import pod_limit_list, pod_request_list, to_list

LIMIT_RANGES = "limitranges"
ANNOTATION = "kubernetes.io/limit-ranger"
MAX_MILLI_VALUE = (2 ** 63 - 1) // 1000  # resource.MaxMilliValue


def _applies(rt, operation: str) -> bool:
    return (rt.storage_key == "pods" and operation == "CREATE") or rt.storage_key == "persistentvolumeclaims"


def _merge(container: dict, default_requests: dict, default_limits: dict, prefix: str) -> list[str]:
    """mergeContainerResources: what the defaults filled in, as the annotation words it."""
    resources = container.get("resources")
    if resources is None:
        resources = container["resources"] = {}
    limits = resources.setdefault("limits", {})
    requests = resources.setdefault("requests", {})
    set_limits = sorted(k for k in default_limits if k not in limits)
    set_requests = sorted(k for k in default_requests if k not in requests)
    for k in set_limits:
        limits[k] = default_limits[k]
    for k in set_requests:
        requests[k] = default_requests[k]
    for key in ("limits", "requests"):
        if not resources[key]:
            del resources[key]
    notes = []
    if set_requests:
        notes.append(", ".join(set_requests) + f" request for {prefix} {container.get('name', '')}")
    if set_limits:
        notes.append(", ".join(set_limits) + f" limit for {prefix} {container.get('name', '')}")
    return notes


def admit(api, operation: str, rt, obj: dict, old: dict | None) -> None:
    if rt.storage_key != "pods" or operation != "CREATE":
        return
    ranges = api.store.list(LIMIT_RANGES, obj["metadata"].get("namespace", ""))
    for lr in ranges:
        requests, limits = {}, {}
        for item in (lr.get("spec") or {}).get("limits") or []:
            if item.get("type") == "Container":
                requests.update(item.get("defaultRequest") or {})
                limits.update(item.get("default") or {})
        if not requests and not limits:
            continue
        spec = obj.setdefault("spec", {})
        notes = []
        for c in spec.get("containers") or []:
            notes.extend(_merge(c, requests, limits, "container"))
        for c in spec.get("initContainers") or []:
            notes.extend(_merge(c, requests, limits, "init container"))
        if notes:
            annotations = obj["metadata"].setdefault("annotations", {})
            annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


# --- constraints (the Validate half) --------------------------------------------------------------
def _observed(req, lim, enforced) -> tuple[int, int, int]:
    """requestLimitEnforcedValues: milli values when all are small enough, else whole values."""
    values = [v for v in (req, lim) if v is not None] + [enforced]
    if all(value(v) <= MAX_MILLI_VALUE for v in values):
        conv = milli_value
    else:
        conv = value
    return (conv(req) if req is not None else 0, conv(lim) if lim is not None else 0, conv(enforced))


def _min(kind: str, name: str, enforced, requests: dict, limits: dict) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    r, li, e = _observed(req, lim, enforced)
    if req is None:
        return f"minimum {name} usage per {kind} is {canonical(enforced)}.  No request is specified"
    if r < e:
        return f"minimum {name} usage per {kind} is {canonical(enforced)}, but request is {canonical(req)}"
    if lim is not None and li < e:
        return f"minimum {name} usage per {kind} is {canonical(enforced)}, but limit is {canonical(lim)}"
    return None


def _max(kind: str, name: str, enforced, requests: dict, limits: dict) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    r, li, e = _observed(req, lim, enforced)
    if lim is None:
        return f"maximum {name} usage per {kind} is {canonical(enforced)}.  No limit is specified"
    if li > e:
        return f"maximum {name} usage per {kind} is {canonical(enforced)}, but limit is {canonical(lim)}"
    if req is not None and r > e:
        return f"maximum {name} usage per {kind} is {canonical(enforced)}, but request is {canonical(req)}"
    return None


def _max_request(kind: str, name: str, enforced, requests: dict) -> str | None:
    req = requests.get(name)
    if req is None:
        return f"maximum {name} usage per {kind} is {canonical(enforced)}.  No request is specified"
    r, _, e = _observed(req, None, enforced)
    if r > e:
        return f"maximum {name} usage per {kind} is {canonical(enforced)}, but request is {canonical(req)}"
    return None


def _ratio(kind: str, name: str, enforced, requests: dict, limits: dict) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    r, li, _ = _observed(req, lim, enforced)
    if req is None or r == 0:
        return (f"{name} max limit to request ratio per {kind} is {canonical(enforced)}, but no request is "
                "specified or request is 0")
    if lim is None or li == 0:
        return (f"{name} max limit to request ratio per {kind} is {canonical(enforced)}, but no limit is "
                "specified or limit is 0")
    observed = li / r
    allowed = float(value(enforced))
    if value(enforced) <= MAX_MILLI_VALUE:
        observed, allowed = observed * 1000, float(milli_value(enforced))
    if observed > allowed:
        return (f"{name} max limit to request ratio per {kind} is {canonical(enforced)}, but provided ratio is "
                f"{li / r:f}")
    return None


def _check(kind: str, item: dict, requests: dict, limits: dict) -> list[str]:
    errs = []
    for field, check in (("min", _min), ("max", _max), ("maxLimitRequestRatio", _ratio)):
        for name in sorted(item.get(field) or {}):
            problem = check(kind, name, parse_quantity(item[field][name]), requests, limits)
            if problem:
                errs.append(problem)
    return errs


def _quantities(raw: dict | None) -> dict:
    return {k: parse_quantity(v) for k, v in (raw or {}).items()}


def _pod_errors(pod: dict, item: dict) -> list[str]:
    kind = item.get("type")
    if kind == "Container":
        spec = pod.get("spec") or {}
        errs = []
        for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
            resources = c.get("resources") or {}
            errs.extend(_check(kind, item, _quantities(resources.get("requests")), _quantities(resources.get("limits"))))
        return errs
    if kind == "Pod":
        return _check(kind, item, pod_request_list(pod), pod_limit_list(pod))
    return []


def _claim_errors(pvc: dict, item: dict) -> list[str]:
    if item.get("type") != "PersistentVolumeClaim":
        return []
    requests = to_list((((pvc.get("spec") or {}).get("resources") or {}).get("requests")))
    errs = []
    for name in sorted(item.get("min") or {}):
        problem = _min("PersistentVolumeClaim", name, parse_quantity(item["min"][name]), requests, {})
        if problem:
            errs.append(problem)
    for name in sorted(item.get("max") or {}):
        problem = _max_request("PersistentVolumeClaim", name, parse_quantity(item["max"][name]), requests)
        if problem:
            errs.append(problem)
    return errs


def validate(api, operation: str, rt, obj: dict, old: dict | None, dry_run: bool) -> None:
    if not _applies(rt, operation):
        return
    check = _pod_errors if rt.storage_key == "pods" else _claim_errors
    errs = []
    for lr in api.store.list(LIMIT_RANGES, obj["metadata"].get("namespace", "")):
        for item in (lr.get("spec") or {}).get("limits") or []:
            errs.extend(check(obj, item))
    if errs:
        raise forbidden(rt, obj["metadata"].get("name", ""), errs[0] if len(errs) == 1 else
                        "[" + ", ".join(errs) + "]")
