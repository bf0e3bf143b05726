"""A StatefulSet's ControllerRevisions: pkg/controller/history/controller_history.go and the StatefulSet
controller's revision handling (stateful_set_utils.go newRevision/ApplyRevision, stateful_set_control.go
getStatefulSetRevisions and truncateHistory).

A revision stores the pod template as a strategic merge patch
(``{"spec": {"template": {..., "$patch": "replace"}}}``), is named
``NAME-HASH`` and labelled ``controller-revision-hash: HASH``; a pod made from
it is labelled ``controller-revision-hash: NAME-HASH``. The hash is
workload.compute_hash's FNV-32a over the template, so it changes exactly when
the template does (upstream hashes the patch bytes).
"""
from __future__ import annotations

from ..errors import ApiError
from ..objects import clone, owner_reference
from .workload import MANAGER, compute_hash, controlled

REVISIONS = "controllerrevisions.apps"
REVISION_HASH_LABEL = "controller-revision-hash"
_STS = "statefulsets.apps"


def patch_of(sts: dict) -> dict:
    """getPatch: the template as a strategic merge patch that replaces it."""
    template = clone(sts["spec"]["template"])
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def template_of(revision: dict) -> dict | None:
    """ApplyRevision's result for the template: the patch's template without its directive."""
    template = ((revision.get("data") or {}).get("spec") or {}).get("template")
    if template is None:
        return None
    return {k: v for k, v in template.items() if k != "$patch"}


def _new_revision(sts: dict, number: int, collisions: int | None) -> dict:
    """newRevision / NewControllerRevision."""
    digest = compute_hash(sts["spec"]["template"], collisions)
    labels = dict((sts["spec"]["template"].get("metadata") or {}).get("labels") or {})
    labels[REVISION_HASH_LABEL] = digest
    meta = {"name": f"{sts['metadata']['name'][:223]}-{digest}", "namespace": sts["metadata"]["namespace"],
            "labels": labels, "ownerReferences": [owner_reference(sts)]}
    if sts["metadata"].get("annotations"):
        meta["annotations"] = dict(sts["metadata"]["annotations"])
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta, "data": patch_of(sts),
            "revision": number}


def construct(api, sts: dict) -> tuple[dict, dict, int | None]:
    """getStatefulSetRevisions: (current revision, update revision, collision count), creating the update
    revision when the template has none yet and renumbering an old one brought back by a rollback."""
    ns = sts["metadata"]["namespace"]
    revisions = sorted(controlled(api, REVISIONS, sts["metadata"]["uid"]), key=lambda r: int(r.get("revision", 0)))
    collisions = (sts.get("status") or {}).get("collisionCount")
    latest = int(revisions[-1].get("revision", 0)) if revisions else 0
    patch = patch_of(sts)
    equal = [r for r in revisions if r.get("data") == patch]
    if equal:
        update = equal[-1]
        if int(update.get("revision", 0)) < latest:
            bumped = clone(update)
            bumped["revision"] = latest + 1
            update = api.update(REVISIONS, bumped, ns, manager=MANAGER)
    else:
        candidate = _new_revision(sts, latest + 1, collisions)
        try:
            update = api.create(REVISIONS, candidate, ns, manager=MANAGER)
        except ApiError as exc:
            if exc.code != 409:
                raise
            bumped = clone(sts)  # a hash collision: count it, so the next sync tries the next name
            bumped["status"] = {**(sts.get("status") or {}), "collisionCount": int(collisions or 0) + 1}
            api.update(_STS, bumped, ns, subresource="status", manager=MANAGER)
            raise
    current_name = (sts.get("status") or {}).get("currentRevision")
    current = next((r for r in revisions if r["metadata"]["name"] == current_name), update)
    return current, update, collisions


def truncate(api, sts: dict, live: set[str], current: dict, update: dict) -> None:
    """truncateHistory: delete the oldest revisions beyond revisionHistoryLimit that no pod runs."""
    keep = {current["metadata"]["name"], update["metadata"]["name"]} | live
    old = [r for r in sorted(controlled(api, REVISIONS, sts["metadata"]["uid"]),
                             key=lambda r: int(r.get("revision", 0))) if r["metadata"]["name"] not in keep]
    excess = len(old) - int(sts["spec"].get("revisionHistoryLimit", 10))
    for rev in old[:max(excess, 0)]:
        try:
            api.delete(REVISIONS, rev["metadata"]["name"], rev["metadata"]["namespace"])
        except ApiError as exc:
            if exc.code != 404:
                raise
