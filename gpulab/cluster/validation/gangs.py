"""scheduling.k8s.io/v1beta1 Workloads and PodGroups (KEP-4671): the main rules of
pkg/apis/scheduling/validation/validation.go for them.

A pod group template or PodGroup needs exactly one of ``basic`` or ``gang``
scheduling policy, a gang a ``minCount`` of at least 1; template names are
unique DNS labels; a Workload has at least one template (at most 8); a
PodGroup's ``workloadRef`` names both the Workload and the template; specs are
immutable.
"""
from __future__ import annotations

from ..errors import FieldError
from .field import OMIT, duplicate, immutable, invalid, required, too_many
from .formats import is_dns1123_label, is_dns1123_subdomain, name_is_dns_subdomain
from .meta import validate_object_meta
from .path import Path

SPEC = Path("spec")
MAX_TEMPLATES = 8  # WorkloadMaxPodGroupTemplates


def _policy(policy: dict | None, path: Path) -> list[FieldError]:
    policy = policy or {}
    chosen = [k for k in ("basic", "gang") if policy.get(k) is not None]
    if not chosen:
        return [invalid(path, OMIT, "must specify one of: `basic`, `gang`")]
    if len(chosen) > 1:
        return [invalid(path, OMIT, "must specify exactly one of: `basic`, `gang`")]
    if chosen == ["gang"]:
        count = policy["gang"].get("minCount")
        if count is None:
            return [required(path.child("gang", "minCount"))]
        if int(count) < 1:
            return [invalid(path.child("gang", "minCount"), int(count), "must be greater than zero")]
    return []


def validate_workload(workload: dict) -> list[FieldError]:
    errs = validate_object_meta(workload.get("metadata") or {}, True, name_is_dns_subdomain)
    spec = workload.get("spec") or {}
    templates = list(spec.get("podGroupTemplates") or ())
    path = SPEC.child("podGroupTemplates")
    if not templates:
        errs.append(required(path, "must have at least one item"))
    elif len(templates) > MAX_TEMPLATES:
        errs.append(too_many(path, len(templates), MAX_TEMPLATES))
    names: set[str] = set()
    for i, template in enumerate(templates):
        template, p = template or {}, path.index(i)
        name = template.get("name") or ""
        if not name:
            errs.append(required(p.child("name")))
        else:
            errs += [invalid(p.child("name"), name, msg) for msg in is_dns1123_label(name)]
        if name in names:
            errs.append(duplicate(p.child("name"), name))
        names.add(name)
        errs += _policy(template.get("schedulingPolicy"), p.child("schedulingPolicy"))
    return errs


def validate_workload_update(new: dict, old: dict) -> list[FieldError]:
    path = SPEC.child("podGroupTemplates")
    errs = immutable(path, (new.get("spec") or {}).get("podGroupTemplates"),
                     (old.get("spec") or {}).get("podGroupTemplates"))
    return errs or validate_workload(new)


def validate_pod_group(pg: dict) -> list[FieldError]:
    errs = validate_object_meta(pg.get("metadata") or {}, True, name_is_dns_subdomain)
    spec = pg.get("spec") or {}
    errs += _policy(spec.get("schedulingPolicy"), SPEC.child("schedulingPolicy"))
    ref = spec.get("workloadRef")
    if ref is not None:
        p = SPEC.child("workloadRef")
        for field, check in (("workloadName", is_dns1123_subdomain), ("templateName", is_dns1123_label)):
            value = ref.get(field) or ""
            if not value:
                errs.append(required(p.child(field)))
            else:
                errs += [invalid(p.child(field), value, msg) for msg in check(value)]
    return errs


def validate_pod_group_update(new: dict, old: dict) -> list[FieldError]:
    return immutable(SPEC, new.get("spec"), old.get("spec")) or validate_pod_group(new)
