"""The ResourceClaim controller: pkg/controller/resourceclaim/controller.go.

* For each pod entry with ``resourceClaimTemplateName`` it creates the claim
  from the template, named ``<pod>-<pod claim name>-<5 random characters>``
  (the base cut to 57 characters by keeping both ends), owned by the pod
  (controller, blockOwnerDeletion) and annotated
  ``resource.kubernetes.io/pod-claim-name: <pod claim name>``, then records it
  in the pod's ``status.resourceClaimStatuses``; an existing claim with that
  owner and annotation is reused. A missing template is a
  ``FailedResourceClaimCreation`` event on the pod.
* It removes pods that are gone or done from claims' ``status.reservedFor``;
  a claim nobody reserves any more is deallocated (allocation cleared, the
  ``resource.kubernetes.io/delete-protection`` finalizer removed), and a
  claim made for a pod that is done is deleted.
"""
from __future__ import annotations

from ..dra.claims import (CLAIMS, DELETE_PROTECTION_FINALIZER, POD_CLAIM_NAME_ANNOTATION, TEMPLATES, pod_claims)
from ..errors import ApiError
from ..objects import clone, controller_of, owner_reference
from .base import Controller
from .workload import MANAGER, controlled, index_by_controller, is_terminal

COMPONENT = "resource_claim"
MAX_BASE_LENGTH = 57


def generate_name(pod_name: str, claim_name: str) -> str:
    """The generateName of a template's claim: ``<pod>-<claim>-``, its middle cut when over 57 characters."""
    base = f"{pod_name}-{claim_name}-"
    if len(base) > MAX_BASE_LENGTH:
        half = MAX_BASE_LENGTH // 2
        base = base[:half] + base[len(base) - half:]
    return base


class ResourceClaimController(Controller):
    name = COMPONENT
    watches = ("pods", CLAIMS, TEMPLATES)

    def __init__(self, api):
        super().__init__(api)
        index_by_controller(api, CLAIMS)

    def keys_for(self, key: str, obj: dict) -> list:
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        if key == "pods":
            keys = [("pod", ns, meta["name"])] if (obj.get("spec") or {}).get("resourceClaims") else []
            # a pod that went away or finished may free the claims it reserved
            keys += [("claim", ns, status.get("resourceClaimName"))
                     for status in (obj.get("status") or {}).get("resourceClaimStatuses") or ()
                     if status.get("resourceClaimName")]
            keys += [("claim", ns, c["resourceClaimName"]) for c in pod_claims(obj) if c.get("resourceClaimName")]
            return keys
        if key == CLAIMS:
            return [("claim", ns, meta["name"])]
        # a new template: the pods waiting for it
        return [("pod", ns, p["metadata"]["name"]) for p in self.api.store.list("pods", ns)
                if any(c.get("resourceClaimTemplateName") == meta["name"] for c in pod_claims(p))]

    def initial_keys(self) -> list:
        keys = []
        for pod in self.api.store.list("pods"):
            keys.extend(self.keys_for("pods", pod))
        for claim in self.api.store.list(CLAIMS):
            keys.extend(self.keys_for(CLAIMS, claim))
        return keys

    async def reconcile(self, work_key) -> float | None:
        kind, ns, name = work_key
        if kind == "pod":
            self._sync_pod(ns, name)
        else:
            self._sync_claim(ns, name)
        return None

    # --- pods: claims from templates ------------------------------------------
    def _sync_pod(self, ns: str, name: str) -> None:
        pod = self.api.try_get("pods", name, ns)
        if pod is None or pod["metadata"].get("deletionTimestamp") or is_terminal(pod):
            return
        statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or ())
        recorded = {s.get("name") for s in statuses}
        changed = False
        for pod_claim in pod_claims(pod):
            template = pod_claim.get("resourceClaimTemplateName")
            if not template or pod_claim.get("name") in recorded:
                continue
            claim_name = self._claim_for(pod, pod_claim, template)
            if claim_name is None:
                continue
            statuses.append({"name": pod_claim["name"], "resourceClaimName": claim_name})
            changed = True
        if changed:
            updated = clone(pod)
            updated.setdefault("status", {})["resourceClaimStatuses"] = statuses
            self.api.update("pods", updated, ns, subresource="status", manager=MANAGER)

    def _claim_for(self, pod: dict, pod_claim: dict, template_name: str) -> str | None:
        """handleClaim: the name of the pod's claim for this entry, made from the template if needed."""
        uid = pod["metadata"]["uid"]
        for claim in controlled(self.api, CLAIMS, uid):
            if (claim["metadata"].get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION) == pod_claim["name"]:
                return claim["metadata"]["name"]
        ns = pod["metadata"]["namespace"]
        template = self.api.try_get(TEMPLATES, template_name, ns)
        if template is None:
            self.api.record_event(pod, "Warning", "FailedResourceClaimCreation",
                                  f"PodResourceClaim {pod_claim['name']}: resource claim template "
                                  f'"{template_name}": resourceclaimtemplate.resource.k8s.io "{template_name}" '
                                  f"not found", "resourceclaim-controller")
            return None
        tmeta, spec = (template.get("spec") or {}).get("metadata") or {}, (template.get("spec") or {}).get("spec")
        owner = {**owner_reference(pod), "blockOwnerDeletion": True}
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"generateName": generate_name(pod["metadata"]["name"], pod_claim["name"]),
                              "ownerReferences": [owner],
                              "annotations": {**(tmeta.get("annotations") or {}),
                                              POD_CLAIM_NAME_ANNOTATION: pod_claim["name"]}},
                 "spec": clone(spec or {})}
        if tmeta.get("labels"):
            claim["metadata"]["labels"] = clone(tmeta["labels"])
        try:
            created = self.api.create(CLAIMS, claim, ns, manager=MANAGER)
        except ApiError as exc:
            self.api.record_event(pod, "Warning", "FailedResourceClaimCreation",
                                  f"PodResourceClaim {pod_claim['name']}: create ResourceClaim "
                                  f"{claim['metadata']['generateName']}: {exc.message}", "resourceclaim-controller")
            return None
        return created["metadata"]["name"]

    # --- claims: reservedFor, deallocation, deletion ------------------------------
    def _sync_claim(self, ns: str, name: str) -> None:
        claim = self.api.try_get(CLAIMS, name, ns)
        if claim is None:
            return
        status = claim.get("status") or {}
        reserved = list(status.get("reservedFor") or ())
        valid = [ref for ref in reserved if ref.get("resource") != "pods" or self._pod_uses(ns, ref)]
        updated = claim
        if len(valid) != len(reserved) or (not valid and status.get("allocation")):
            updated = clone(claim)
            new_status = updated.setdefault("status", {})
            if valid:
                new_status["reservedFor"] = valid
            else:
                new_status.pop("reservedFor", None)
                new_status.pop("allocation", None)  # deallocate: nobody uses it
            updated = self.api.update(CLAIMS, updated, ns, subresource="status", manager=MANAGER)
        finalizers = list(updated["metadata"].get("finalizers") or ())
        if not valid and DELETE_PROTECTION_FINALIZER in finalizers and not (updated.get("status") or {}).get(
                "allocation"):
            updated = clone(updated)
            updated["metadata"]["finalizers"] = [f for f in finalizers if f != DELETE_PROTECTION_FINALIZER]
            updated = self.api.update(CLAIMS, updated, ns, manager=MANAGER)
        owner = controller_of(updated)
        if owner and owner.get("kind") == "Pod" and not valid and not updated["metadata"].get("deletionTimestamp"):
            pod = self.api.try_get("pods", owner.get("name", ""), ns)
            if pod is None or pod["metadata"].get("uid") != owner.get("uid") or is_terminal(pod):
                try:
                    self.api.delete(CLAIMS, name, ns)
                except ApiError as exc:
                    if exc.code != 404:
                        raise

    def _pod_uses(self, ns: str, ref: dict) -> bool:
        pod = self.api.try_get("pods", ref.get("name", ""), ns)
        return pod is not None and pod["metadata"].get("uid") == ref.get("uid") and not is_terminal(pod) and \
            not (pod["metadata"].get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName"))
