"""The ResourceQuota admission plugin: staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota
(admission.go, controller.go ``checkRequest``).

For a create (or an update that grows usage) in a namespace with quotas: each
quota whose hard limits the object's evaluator counts and whose scopes match
must have usage stats, its constraints must hold (cpu and memory quotas make
every container state them), and used + requested must stay within hard;
then the quota's ``status.used`` is charged before the object is stored (not
on dry run). Rejections are the 403s upstream sends:
``exceeded quota: NAME, requested: ..., used: ..., limited: ...``,
``failed quota: NAME: must specify ...``, ``status unknown for quota: NAME, resources: ...``.
"""
from __future__ import annotations

from .. import quota
from ..defaults.admission import forbidden
from ..objects import clone

QUOTAS = "resourcequotas"


def _namespaced_quotas(api, namespace: str) -> list[dict]:
    return api.store.list(QUOTAS, namespace) if namespace else []


def validate(api, operation: str, rt, obj: dict, old: dict | None, dry_run: bool) -> None:
    if not rt.namespaced or rt.storage_alias or rt.crd is not None and not rt.crd.get("storage", True):
        return
    namespace = obj["metadata"].get("namespace", "")
    quotas = _namespaced_quotas(api, namespace)
    if not quotas:
        return
    kind = rt.storage_key
    name = obj["metadata"].get("name", "")
    interesting = []
    for q in quotas:
        if not quota.matches(q, kind, obj):
            continue
        hard = (q.get("status") or {}).get("hard") or {}
        restricted = quota.matching_resources(kind, hard)
        problem = quota.constraints(kind, restricted, obj)
        if problem:
            raise forbidden(rt, name, f"failed quota: {q['metadata']['name']}: {problem}")
        used = (q.get("status") or {}).get("used") or {}
        if any(r in hard and r not in used for r in restricted):
            raise forbidden(rt, name, f"status unknown for quota: {q['metadata']['name']}, resources: "
                                      f"{','.join(sorted(restricted))}")
        interesting.append(q)
    if not interesting:
        return
    now = api.clock()
    delta = quota.usage(kind, obj, now)
    if operation == "UPDATE" and old is not None:
        before = quota.usage(kind, old, now)
        delta = {k: max(v - before.get(k, 0), 0) for k, v in delta.items()}
    delta = {k: v for k, v in delta.items() if v}
    if not delta:
        return
    charged = []
    for q in interesting:
        status = q.get("status") or {}
        hard, used = quota.to_list(status.get("hard")), quota.to_list(status.get("used"))
        requested = quota.mask(delta, hard)
        new_used = quota.add(used, requested)
        exceeded = sorted(k for k in requested if new_used[k] > hard[k])
        if exceeded:
            raise forbidden(rt, name, f"exceeded quota: {q['metadata']['name']}, "
                                      f"requested: {quota.pretty(quota.mask(requested, exceeded), status['hard'])}, "
                                      f"used: {quota.pretty(quota.mask(used, exceeded), status['hard'])}, "
                                      f"limited: {quota.pretty(quota.mask(hard, exceeded), status['hard'])}")
        charged.append((q, new_used))
    if dry_run:
        return
    for q, new_used in charged:
        if new_used == quota.to_list((q.get("status") or {}).get("used")):
            continue
        updated = clone(q)
        updated["status"]["used"] = {**updated["status"].get("used", {}),
                                     **quota.formatted(new_used, updated["status"]["hard"])}
        api.update(QUOTAS, updated, namespace, subresource="status", manager="kube-apiserver")
